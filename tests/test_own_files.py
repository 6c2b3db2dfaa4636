"""A user's own molecule file as spreadsheets write it: comma, semicolon or tab between fields, a
byte-order mark, CRLF; class labels written as two words, kept so predictions answer in them."""

from __future__ import annotations

import csv
import json
import re

import pytest
from smiles_files import CLASS_WORDS, write_classes_csv, write_smiles_csv

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


def test_a_label_column_of_one_word_is_a_clear_error_and_of_three_words_three_classes(tmp_path):
    comma = write_smiles_csv(tmp_path / "m.csv", n=30)
    path = rewritten(comma, tmp_path / "w.csv", ",", bom=False, words=("a", "a"))
    with pytest.raises(UserError) as caught:
        read(path)
    assert "1 different label(s) in 'p_np' (a)" in caught.value.message
    assert "two classes or more" in caught.value.message
    path = rewritten(comma, tmp_path / "w.csv", ",", bom=False, words=("b", "a"))
    path.write_text(path.read_text().replace(",a,", ",C,", 1))  # a third word, as the file's first of it
    table = read(path)
    assert table.classes == ["a", "b", "C"] and not table.label_words  # alphabetical, whatever the case
    assert table.labels[:3] == [1, 2, 0] and sorted(set(table.labels)) == [0, 1, 2]


def test_several_classes_as_integers_and_what_is_no_class(tmp_path):
    def file(name: str, cells: list[str], columns: str = "y") -> object:
        rows = [f"C{'C' * (i % 5)}O,{cell}" for i, cell in enumerate(cells)]
        (tmp_path / name).write_text(f"smiles,{columns}\n" + "\n".join(rows) + "\n")
        return tmp_path / name

    table = read_smiles_csv(file("k.csv", ["0", "1", "2.0", "3"] * 5), "smiles", "y", strict=True)
    assert table.classes == ["0", "1", "2", "3"] and table.labels[:4] == [0, 1, 2, 3]
    for cells in (["0", "1", "3"] * 5, ["0", "1", "2.5"] * 5):  # not 0 to K-1: measurements (refused by smiles_csv)
        table = read_smiles_csv(file("bad.csv", cells), "smiles", "y", strict=False)
        assert not table.classes and table.numbers_not_binary == [4, 7, 10, 13, 16]
    with pytest.raises(UserError, match=re.escape("120 different label(s) in 'y' (w0, w1, w2, w3, w4, ...)")):
        read_smiles_csv(file("names.csv", [f"w{i}" for i in range(120)]), "smiles", "y", strict=False)
    several = file("two.csv", [f"{i % 3},{i % 2}" for i in range(15)], columns="y,z")
    with pytest.raises(UserError, match=r"column 'y' .* holds 3 classes \(0, 1, 2\).*dataset.label_column=y"):
        read_smiles_csv(several, "smiles", ["y", "z"], strict=False)


def test_a_class_a_split_lacks_is_named(tmp_path):
    """A scaffold split may leave a class out of a split: the run names it (its macro ROC-AUC is the
    mean over the classes the split has, tests/test_metrics.py)."""
    from ddpx.plugins.smiles.data import log_absent_classes

    table = read_smiles_csv(write_classes_csv(tmp_path / "c.csv", n=30), "smiles", "activity", strict=True)
    by_class = {k: [i for i, label in enumerate(table.labels) if label == k] for k in range(3)}
    splits = {"train": by_class[0] + by_class[1], "dev": by_class[2] + by_class[1], "heldout": range(30)}
    said = []
    log_absent_classes(table, splits, said.append)
    assert said == [
        "1 class(es) have no molecule in the training split (CM): the model cannot learn them.",
        "1 class(es) have no molecule in the dev split (CA): its macro ROC-AUC is the other classes' mean.",
    ]


@pytest.mark.slow
def test_a_word_labelled_semicolon_file_trains_on_the_comma_files_splits_and_predicts_in_its_words(
    job_here, ddpx_here, tmp_path
):
    comma = write_smiles_csv(tmp_path / "comma.csv", n=150, bom=False)
    words = rewritten(comma, tmp_path / "words.csv", ";", bom=True, words=("no", "yes"))
    tab = rewritten(comma, tmp_path / "tab.tsv", "\t", bom=True)
    # the three files give a run the same splits, molecule for molecule and label for label (built here as
    # rank 0 builds them): with one seed, the same run; so one job, on the word-labelled file, stands for them
    data = [built(path, "rnn", []) for path in (comma, words, tab)]
    for split in ("train", "dev", "heldout"):
        first = getattr(data[0], split)
        assert len(first.labels) > 0
        for other in (getattr(d, split) for d in data[1:]):
            assert [q.tolist() for q in other.sequences] == [q.tolist() for q in first.sequences]
            assert torch_equal(other.labels, first.labels)
    folder = tmp_path / "words"
    folder.mkdir()
    keys = [f"dataset.path={words}", "dataset.label_column=p_np", "train.max_epochs=1", "model.embedding_dim=16"]
    result = job_here("smiles_csv_rnn", *keys, cwd=folder)
    summary = json.loads((result.run_dirs()[0] / "summary.json").read_text())
    assert summary["heldout_samples"] == len(data[1].heldout.labels), summary
    new = tmp_path / "new.csv"
    # an empty cell, a euro sign, a ring never closed (it tokenizes; RDKit cannot parse it)
    new.write_text('smiles\nCCOCl\n""\nC\u20acC\nc1ccccc1O\nC1CC\n', encoding="utf-8")
    out = tmp_path / "predictions.csv"
    model = (tmp_path / "words").glob("ddpx-runs/*/model")
    result = ddpx_here("predict", str(next(model)), str(new), "--output", str(out))
    assert result.returncode == 0, result.output
    assert "3 row(s) the model cannot read were left unanswered (line 3, 4, 6 of" in result.stderr
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    answered = [rows[0], rows[3]]  # a screening file: the readable rows answered, the others marked
    assert [r["predicted"] for r in answered] == ["yes" if float(r["probability"]) >= 0.5 else "no" for r in answered]
    assert [r["problem"] for r in rows] == [
        "",
        "an empty SMILES",
        "characters the SMILES tokenizer cannot represent",
        "",
        "RDKit cannot parse this SMILES",  # left out of training by every family, unanswered by every family
    ]
    assert rows[1]["probability"] == rows[2]["probability"] == rows[4]["probability"] == ""


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


FAMILIES = {  # small models: the test is about several classes through each family, not about learning them well
    "rnn": ["model.embedding_dim=16", "model.d_model=16", "model.num_layers=1"],
    "dmpnn": ["model.hidden_size=32", "model.ffn_hidden_size=16", "model.depth=2"],
    "ffn": ["dataset.molecule_features=morgan_count", "model.hidden_size=32"],
}


@pytest.mark.slow
def test_three_classes_train_with_every_family_on_two_ranks_and_predict_class_names(
    job_here, ddpx_here, tmp_path, tracking_uri
):
    """One file of three classes (CI/CM/CA as HIV writes them), each family on 2 spawned ranks with a
    real MLflow store: the run's macro ROC-AUC and accuracy are scikit-learn's over its predictions
    file, the confusion matrix counts the held-out molecules, and ddpx predict answers class names."""
    pytest.importorskip("chemprop")
    from mlflow import MlflowClient
    from test_image_folder import assert_heldout_reports_agree

    path = write_classes_csv(tmp_path / "classes.csv", n=90)
    classes = sorted(CLASS_WORDS)  # CA, CI, CM: alphabetical
    client = MlflowClient(tracking_uri)
    for family, keys in FAMILIES.items():
        folder = tmp_path / family
        folder.mkdir()
        job_here(
            f"smiles_csv_{family}",
            f"dataset.path={path}",
            "dataset.label_column=activity",
            "train.max_epochs=2",
            *keys,
            tracking_uri=tracking_uri,
            env={"DDPX_DATA_DIR": str(tmp_path / "data")},
            cwd=folder,
        )
        (run_dir,) = (folder / "ddpx-runs").iterdir()
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["metric"] == "roc_auc" and summary["greater_is_better"] and summary["heldout_samples"] == 9
        assert_heldout_reports_agree(run_dir / "reports", summary, classes)
        run = client.get_run(summary["run_id"])
        assert run.data.tags["ddpx.metric"] == "heldout_roc_auc" and run.data.tags["ddpx.metric_direction"] == "max"
        assert {"heldout_roc_auc", "heldout_accuracy"} <= set(run.data.metrics)
        assert "heldout_confusion_matrix.csv" in {a.path for a in client.list_artifacts(run.info.run_id)}
        assert json.loads((run_dir / "model" / "model.json").read_text())["task_info"]["classes"] == classes
    new = tmp_path / "new.csv"
    new.write_text("smiles\nCCOCl\nC1CC\nc1ccccc1I\n", encoding="utf-8")  # the middle one RDKit cannot parse
    out = tmp_path / "predicted.csv"
    answer = ddpx_here("predict", str(run_dir / "model"), str(new), "--output", str(out))  # the features model's
    assert answer.returncode == 0, answer.output
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [r["predicted"] in classes for r in rows] == [True, False, True] and rows[1]["problem"]
    for row in (rows[0], rows[2]):
        probabilities = {c: float(row[f"probability_{c}"]) for c in classes}
        assert row["predicted"] == max(probabilities, key=probabilities.get)
        assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-12)
