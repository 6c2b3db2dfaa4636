"""``benchmarks/vs_chemprop``'s split (:func:`ddpx_split`): the molecules and labels it hands to
Chemprop are the rows a rank keeps, read as the rank reads the file, so they stay aligned when the
recipe canonicalises SMILES and drops a row RDKit cannot parse."""

import sys
from pathlib import Path

import pytest

from tests.smiles_files import write_smiles_csv

ROOT = Path(__file__).resolve().parent.parent  # on sys.path: `benchmarks` importable
sys.path.insert(0, str(ROOT))

from benchmarks.vs_chemprop.chemprop_inputs import ddpx_split  # noqa: E402

pytest.importorskip("rdkit")


def test_the_split_stays_aligned_when_canonicalising_drops_an_unparseable_row(tmp_path):
    source = write_smiles_csv(tmp_path / "made.csv", n=120, bom=False).read_text().splitlines()
    unparseable = '0,"an open ring",1,C1CCC'  # the tokenizer reads it; RDKit does not
    path = tmp_path / "with_bad_row.csv"
    path.write_text("\n".join([source[0], unparseable, *source[1:]]) + "\n")

    smiles, labels, names, rows = ddpx_split("bbbp_dmpnn", path, ["dataset.canonicalize=true"])

    assert names == ["p_np"] and "C1CCC" not in smiles
    kept = [i for part in rows.values() for i in part]
    assert sorted(kept) == list(range(120))  # every parseable molecule, in one split
    assert all(labels[i] == int("Cl" in smiles[i]) for i in kept)  # each label is its own molecule's
