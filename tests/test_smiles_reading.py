"""The SMILES tokenizer and CSV reading: real-file quirks, bad rows, clear errors."""

import itertools

import pytest
from real_data import BBBP, needs_bbbp
from smiles_files import write_multilabel_csv, write_regression_csv, write_smiles_csv

from ddpx.contract.errors import UserError
from ddpx.plugins.smiles.csv_table import read_smiles_csv
from ddpx.plugins.smiles.splits import random_split, scaffold_split
from ddpx.plugins.smiles.tokenizer import UNK, Vocabulary, tokenize


@pytest.mark.parametrize(
    "smiles, tokens",
    [
        ("CCl", ["C", "Cl"]),
        ("BrCC(=O)[nH]1", ["Br", "C", "C", "(", "=", "O", ")", "[nH]", "1"]),
        ("C%10CCC%10", ["C", "%10", "C", "C", "C", "%10"]),
        ("[C@@H](N)[Na+].[Cl-]", ["[C@@H]", "(", "N", ")", "[Na+]", ".", "[Cl-]"]),
        ("c1ccccc1/C=C\\C", ["c", "1", "c", "c", "c", "c", "c", "1", "/", "C", "=", "C", "\\", "C"]),
    ],
)
def test_multi_character_tokens_stay_whole(smiles, tokens):
    assert tokenize(smiles) == tokens


@pytest.mark.parametrize("smiles", ["CC X", "C€C", "C[C", "Q"])
def test_unrepresentable_characters_are_detected(smiles):
    assert tokenize(smiles) is None


def test_vocabulary_has_padding_unknown_and_training_tokens_only():
    vocab = Vocabulary.build([["C", "C", "O"], ["C", "N"]])
    assert vocab.tokens[:2] == ["<pad>", UNK] and vocab.tokens[2] == "C"
    assert vocab.encode(["C", "Cl", "N"]) == [2, 1, vocab.index["N"]]  # Cl was never seen in training
    assert Vocabulary(vocab.to_list()).index == vocab.index


def test_real_file_quirks_are_read(tmp_path):
    path = write_smiles_csv(tmp_path / "mols.csv", n=30, extra_rows="\r\n\r\n,,,\r\n")  # BOM, CRLF, blank lines
    table = read_smiles_csv(path, "smiles", "p_np", strict=True)
    assert len(table.smiles) == 30 and not table.skipped
    assert set(table.labels) == {0, 1}


def test_bad_rows_are_counted_with_line_numbers_and_skipped(tmp_path):
    extra = '99,"empty, smiles",1,\r\n100,bad label,2,CCO\r\n101,odd chars,0,CC X\r\n102,fine,0,CCN\r\n103,bad label,yes,CC\r\n'
    path = write_smiles_csv(tmp_path / "mols.csv", n=10, extra_rows=extra)
    table = read_smiles_csv(path, "smiles", "p_np", strict=False)
    assert len(table.smiles) == 11
    assert dict(table.skipped) == {
        "an empty SMILES": [12],
        "a label that is not 0/1 in 'p_np'": [13, 16],
        "characters the SMILES tokenizer cannot represent": [14],
    }
    report = table.skipped_report()
    assert "2 with a label that is not 0/1 in 'p_np' (line 13, 16)" in report
    with pytest.raises(UserError, match="has bad rows: .*dataset.strict=false"):
        read_smiles_csv(path, "smiles", "p_np", strict=True)


def test_missing_column_names_the_columns_and_the_key(tmp_path):
    path = write_smiles_csv(tmp_path / "mols.csv", n=10)
    with pytest.raises(
        UserError, match=r"no column 'smile'\. Did you mean 'smiles'\?.*num, name, p_np, smiles.*dataset\.smiles_column"
    ):
        read_smiles_csv(path, "smile", "p_np", strict=False)


def test_one_class_empty_and_binary_files_are_clear_errors(tmp_path):
    one_class = tmp_path / "one.csv"
    one_class.write_text("smiles,p_np\nCCO,1\nCCN,1\n")
    with pytest.raises(UserError, match="only label 1 .*needs both 0 and 1"):
        read_smiles_csv(one_class, "smiles", "p_np", strict=False)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(UserError, match="is empty"):
        read_smiles_csv(empty, "smiles", "p_np", strict=False)
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe\x00\x00")
    with pytest.raises(UserError, match="not UTF-8 text"):
        read_smiles_csv(binary, "smiles", "p_np", strict=False)


def test_random_split_is_stratified_and_seeded():
    labels = [i % 4 != 0 for i in range(1000)]
    train, dev, heldout = random_split(labels, seed=3, heldout_fraction=0.1, dev_fraction=0.2)
    assert (len(train), len(dev), len(heldout)) == (720, 180, 100)
    assert sorted([*train, *dev, *heldout]) == list(range(1000))
    assert sum(labels[i] for i in heldout) == 75  # the 3:1 balance, exactly
    again = random_split(labels, seed=3, heldout_fraction=0.1, dev_fraction=0.2)
    assert all((a == b).all() for a, b in zip(again, (train, dev, heldout)))


def test_scaffold_split_keeps_each_scaffold_in_one_split():
    pytest.importorskip("rdkit")
    from ddpx.plugins.smiles.chem import murcko_scaffold

    smiles = [
        "c1ccccc1CC",
        "c1ccccc1CCC",
        "c1ccccc1O",
        "C1CCCCC1N",
        "C1CCCCC1O",
        "c1ccncc1C",
        "c1ccncc1N",
        "c1ccoc1C",
        "CCCC",
        "CCO",
        "C1CCNCC1C",
        "c1ccsc1",
    ] * 5
    train, dev, heldout = scaffold_split(smiles, heldout_fraction=0.2, dev_fraction=0.2)
    assert sorted([*train, *dev, *heldout]) == list(range(len(smiles)))
    where = {}
    for name, part in (("train", train), ("dev", dev), ("heldout", heldout)):
        for i in part:
            assert where.setdefault(murcko_scaffold(smiles[i]), name) == name


@needs_bbbp
def test_the_real_bbbp_file_reads_completely():
    table = read_smiles_csv(BBBP, "smiles", "p_np", strict=True)
    assert len(table.labels) == 2050
    assert sum(table.labels) == 1567


def test_the_test_files_molecules_all_parse_with_rdkit(tmp_path):
    """Every family reads the same molecules of these files: none is one RDKit refuses."""
    pytest.importorskip("rdkit")
    from ddpx.plugins.smiles.chem import canonicalizer

    canonical = canonicalizer()
    for seed in range(3):
        files = [
            (write_smiles_csv(tmp_path / "a.csv", n=300, seed=seed), "p_np", False),
            (write_multilabel_csv(tmp_path / "b.csv", n=300, seed=seed), ["has Cl", "has, Br"], False),
            (write_regression_csv(tmp_path / "c.csv", n=300, seed=seed), ["log S", "melting, point"], True),
        ]
        for path, labels, regression in files:
            table = read_smiles_csv(path, "smiles", labels, strict=True, canonical=canonical, regression=regression)
            assert len(table.smiles) == 300 and not table.skipped


def test_canonical_smiles_with_rdkit_merge_spellings_and_skip_what_does_not_parse(tmp_path):
    pytest.importorskip("rdkit")
    from ddpx.plugins.smiles.chem import canonicalizer

    path = tmp_path / "m.csv"
    path.write_text("num,name,p_np,smiles\n1,a,1,OCC\n2,b,0,C(O)C\n3,c,1,C1CC\n4,d,0,c1ccccc1\n", encoding="utf-8")
    table = read_smiles_csv(path, "smiles", "p_np", strict=False, canonical=canonicalizer())
    assert table.smiles == ["CCO", "CCO", "c1ccccc1"]  # two spellings of ethanol, one form
    assert dict(table.skipped) == {"a SMILES RDKit cannot parse": [4]}  # the unclosed ring, on line 4


def test_a_file_too_small_or_too_one_sided_for_its_split_is_refused_with_its_counts():
    with pytest.raises(UserError, match=r"'m.csv' has 2 molecule\(s\), too few to split .* at least 3 molecules"):
        random_split([0.5, 1.5], 0, 0.1, 0.2, stratify=False, source="'m.csv'")
    with pytest.raises(UserError, match=r"has 60 molecules, only 1 of them with label 0: .*at least 10 in all"):
        random_split([0] + [1] * 59, 0, 0.1, 0.2)
    with pytest.raises(UserError, match="all with label 1"):
        random_split([1] * 40, 0, 0.1, 0.2)
    accepted, refused = [], []
    for n, rare, heldout, dev in itertools.product((12, 30, 61), (1, 2, 4, 7, 10), (0.1, 0.25), (0.2, 1 / 9)):
        labels = [0] * rare + [1] * (n - rare)
        try:
            parts = random_split(labels, 0, heldout, dev)
        except UserError:  # too few of the rare label for this split: refused, as above
            refused.append((n, rare, heldout, dev))
            continue
        assert all({labels[i] for i in part} == {0, 1} for part in parts), (n, rare, heldout, dev)
        accepted.append((n, rare, heldout, dev))
    assert len(accepted) >= 5 and (61, 10, 0.1, 0.2) in accepted, accepted  # the property was tested, not skipped
    assert (61, 7, 0.1, 0.2) in refused and (12, 10, 0.1, 0.2) in refused, refused
