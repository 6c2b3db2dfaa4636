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
