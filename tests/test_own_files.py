"""A user's own molecule file as spreadsheets write it: comma, semicolon or tab between fields, a
byte-order mark, CRLF; class labels written as two words, kept so predictions answer in them."""

from __future__ import annotations

import csv
import json

import pytest
from smiles_files import write_smiles_csv

from ddpx.contract.errors import UserError
from ddpx.plugins.smiles.csv_table import read_smiles_csv


def rewritten(source, path, delimiter: str, bom: bool, words: tuple[str, str] | None = None):
    """``source``'s rows written with another delimiter (and the labels as ``words``)."""
    with source.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    if words is not None:
        rows = [rows[0]] + [[*r[:2], words[int(r[2])], *r[3:]] for r in rows[1:]]
    with path.open("w", encoding="utf-8-sig" if bom else "utf-8", newline="") as fh:
        csv.writer(fh, delimiter=delimiter, lineterminator="\r\n").writerows(rows)
    return path


def read(path):
    return read_smiles_csv(path, "smiles", "p_np", strict=False)


def test_comma_semicolon_and_tab_files_read_alike(tmp_path):
    comma = write_smiles_csv(tmp_path / "comma.csv", n=60, bom=False)
    tables = [read(comma)]
    for name, delimiter in (("semicolon.csv", ";"), ("tab.tsv", "\t")):
        tables.append(read(rewritten(comma, tmp_path / name, delimiter, bom=True)))
    assert len(tables[0].smiles) == 60 and sum(tables[0].labels) == 40
    assert all(t.smiles == tables[0].smiles and t.labels == tables[0].labels for t in tables[1:])


@pytest.mark.parametrize(
    "words, classes",
    [
        (("no", "yes"), ["no", "yes"]),
        (("Active", "Inactive"), ["Inactive", "Active"]),  # the word says which class is 1, not the alphabet
        (("TRUE", "FALSE"), ["FALSE", "TRUE"]),
        (("penetrates", "blocked"), ["blocked", "penetrates"]),  # any two: the second alphabetically is 1
    ],
)
def test_labels_written_as_two_words_are_classes(tmp_path, words, classes):
    comma = write_smiles_csv(tmp_path / "m.csv", n=30)
    table = read(rewritten(comma, tmp_path / "words.csv", ";", bom=True, words=words))
    assert table.label_words == {"p_np": classes}
    assert [classes[label] for label in table.labels] == [words[int(i % 3 != 0)] for i in range(30)]


def test_a_label_column_of_three_words_or_one_is_a_clear_error(tmp_path):
    comma = write_smiles_csv(tmp_path / "m.csv", n=30)
    for words, said in ((("a", "b"), None), (("a", "a"), "1 different label(s)")):
        path = rewritten(comma, tmp_path / "w.csv", ",", bom=False, words=words)
        if said is None:
            text = path.read_text().replace(",a,", ",c,", 1)  # a third word
            path.write_text(text)
            said = "3 different label(s) in 'p_np'"
        with pytest.raises(UserError) as caught:
            read(path)
        assert said in caught.value.message and "two classes" in caught.value.message


@pytest.mark.slow
def test_a_word_labelled_semicolon_file_trains_like_the_comma_file_and_predicts_in_its_words(
    job_here, ddpx_here, tmp_path
):
    comma = write_smiles_csv(tmp_path / "comma.csv", n=150, bom=False)
    words = rewritten(comma, tmp_path / "words.csv", ";", bom=True, words=("no", "yes"))
    tab = rewritten(comma, tmp_path / "tab.tsv", "\t", bom=True)
    heldout = []
    for path in (comma, words, tab):
        folder = tmp_path / path.stem
        folder.mkdir()
        keys = [f"dataset.path={path}", "dataset.label_column=p_np", "train.max_epochs=1", "model.embedding_dim=16"]
        result = job_here("smiles_csv_rnn", *keys, cwd=folder)
        heldout.append(json.loads((result.run_dirs()[0] / "summary.json").read_text())["heldout"])
    assert heldout[0] == heldout[1] == heldout[2]  # the same molecules, the same labels, the same run
    new = tmp_path / "new.csv"
    new.write_text('smiles\nCCOCl\n""\nC\u20acC\nc1ccccc1O\n', encoding="utf-8")  # an empty cell, a euro sign
    out = tmp_path / "predictions.csv"
    model = (tmp_path / "words").glob("ddpx-runs/*/model")
    result = ddpx_here("predict", str(next(model)), str(new), "--output", str(out))
    assert result.returncode == 0, result.output
    assert "2 row(s) the model cannot read were left unanswered (line 3, 4 of" in result.stderr
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    answered = [rows[0], rows[3]]  # a screening file: the readable rows answered, the others marked
    assert [r["predicted"] for r in answered] == ["yes" if float(r["probability"]) >= 0.5 else "no" for r in answered]
    assert [r["problem"] for r in rows] == [
        "",
        "an empty SMILES",
        "characters the SMILES tokenizer cannot represent",
        "",
    ]
    assert rows[1]["probability"] == rows[2]["probability"] == "" and rows[1]["predicted"] == ""


def built(path, family: str, said: list, *keys: str):
    """The splits the recipe ``smiles_csv_<family>`` builds from ``path`` (in this process, rank 0 of 1)."""
    from ddpx.config.recipe import resolve_recipe
    from ddpx.contract.records import DataRequest
    from ddpx.plugin_host.registry import load_registry

    registry = load_registry()
    recipe = resolve_recipe(
        registry, f"smiles_csv_{family}", [f"dataset.path={path}", "dataset.label_column=p_np", *keys]
    )
    task = registry.task_of(recipe.config)
    request = DataRequest(
        params=recipe.config["dataset"],
        seed=0,
        rank=0,
        world_size=1,
        local_rank=0,
        barrier=lambda: None,
        log=said.append,
        inputs=task.input_for(recipe.model),
    )
    return task.build_data(request)


def test_every_family_leaves_the_same_unparsable_molecules_out_and_says_which_lines(tmp_path, monkeypatch):
    pytest.importorskip("chemprop")
    from test_dmpnn import UNPARSABLE, write_graph_csv

    monkeypatch.setenv("DDPX_DATA_DIR", str(tmp_path / "data"))
    path = write_graph_csv(tmp_path / "mols.csv", n=60, unparsable=4)  # lines 2-5
    table = read(path)
    said = {family: [] for family in ("rnn", "dmpnn", "ffn")}
    features = {"ffn": ["dataset.molecule_features=morgan_count"]}  # which rows, whatever the features
    data = {family: built(path, family, said[family], *features.get(family, [])) for family in said}
    tokens = data["rnn"].info["vocab"]
    for split in ("train", "dev", "heldout"):
        read_by_rnn = ["".join(tokens[t] for t in seq.tolist()) for seq in getattr(data["rnn"], split).sequences]
        for family in ("dmpnn", "ffn"):
            dataset = getattr(data[family], split)
            assert read_by_rnn == [table.smiles[row] for row in dataset.rows]
            assert torch_equal(getattr(data["rnn"], split).labels, dataset.labels)
        assert not set(read_by_rnn) & set(UNPARSABLE)
    reports = {family: [line for line in lines if "RDKit cannot parse" in line] for family, lines in said.items()}
    assert all(len(lines) == 1 for lines in reports.values()), reports
    assert len({lines[0] for lines in reports.values()}) == 1  # word for word
    assert (
        reports["rnn"][0].startswith("skipped 4 molecule(s) RDKit cannot parse (")
        and "at line 2, 3, 4, 5:" in (reports["rnn"][0])
    )


def torch_equal(a, b) -> bool:
    import torch

    return torch.equal(a, b)


def test_without_rdkit_the_smiles_model_keeps_every_row_and_says_so_once(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    from test_dmpnn import write_graph_csv

    path = write_graph_csv(tmp_path / "mols.csv", n=60, unparsable=2)
    tests = Path(__file__).parent
    code = (
        "from test_own_files import built\n"
        "said = []\n"
        f"data = built({str(path)!r}, 'rnn', said)\n"
        "print(len(data.train) + len(data.dev) + len(data.heldout))\n"
        "print(sum('RDKit is not installed' in line for line in said))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tests / "fake_no_rdkit"), str(tests), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["60", "1"]  # every row, the unparsable two too; said once
