"""Pretraining targets: the fast RDKit descriptors equal RDKit's own calculators, computed over two
real ranks (spawned, with gloo's barrier) into the same cache as one rank writes, and a cache
stopped half-way goes on, never reading a half-written part."""

from __future__ import annotations

import multiprocessing
import os
import re
from pathlib import Path

import numpy
import pytest
import torch.distributed as dist  # imported here, once: the forked ranks share it

rdkit = pytest.importorskip("rdkit", reason="the descriptor targets need RDKit (pip install 'ddpx[chem]')")

from rdkit import Chem  # noqa: E402
from rdkit.Chem import Descriptors  # noqa: E402

from ddpx.plugins.smiles import descriptor_cache  # noqa: E402
from ddpx.plugins.smiles.descriptors import NAMES, compute_descriptors  # noqa: E402

SMILES = [
    "CCO",
    "c1ccccc1O",
    "C1CC",  # RDKit cannot parse it: a row of NaN
    "[Na+].[Cl-]",
    "C[C@H](N)C(=O)O",
    "O=C=O",
    "CCN(CC)CC",
    "FC(F)(F)c1ccncc1",
    "Brc1ccc(S(=O)(=O)N)cc1",
    "C1CC2(CC1)CCNC2",
    "CC(C)(C)OC(=O)N1CCC[C@H]1C(=O)O",
    "c1ccc2[nH]ccc2c1",
]
SYMBOLS = {"C": 6, "N": 7, "O": 8, "S": 16, "F": 9, "Cl": 17, "Br": 35}


def rdkit_row(smiles: str) -> list[float]:
    """The descriptors as RDKit's ``Descriptors`` module names them, and the atom counts by hand."""
    mol = Chem.MolFromSmiles(smiles)
    atoms = list(mol.GetAtoms())
    by_hand = {
        "HeavyAtomCount": mol.GetNumHeavyAtoms(),
        "FormalCharge": sum(a.GetFormalCharge() for a in atoms),
        "NumHs": sum(a.GetTotalNumHs() for a in atoms),
        "NumAromaticAtoms": sum(a.GetIsAromatic() for a in atoms),
        **{f"Num{symbol}": sum(a.GetAtomicNum() == number for a in atoms) for symbol, number in SYMBOLS.items()},
    }
    return [by_hand[name] if name in by_hand else getattr(Descriptors, name)(mol) for name in NAMES]


def test_the_descriptors_are_rdkits_own_and_an_unparsable_molecule_is_nan():
    rows = compute_descriptors(SMILES)
    assert rows.shape == (len(SMILES), len(NAMES)) == (12, 36) and rows.dtype == numpy.float32
    for smiles, row in zip(SMILES, rows):
        if Chem.MolFromSmiles(smiles) is None:
            assert numpy.isnan(row).all()
        else:
            assert row.tolist() == numpy.asarray(rdkit_row(smiles), numpy.float32).tolist(), smiles
    assert rows[SMILES.index("Brc1ccc(S(=O)(=O)N)cc1"), NAMES.index("NumBr")] == 1
    assert rows[SMILES.index("[Na+].[Cl-]"), NAMES.index("FormalCharge")] == 0


def write_targets(rank: int, world_size: int, data_dir: str, init_file: str) -> None:
    """One rank: compute the table's targets into the cache, sharing the parts out over the ranks
    (gloo's barrier between them); what it did goes to ``rank-N.log`` beside the cache."""
    os.environ["DDPX_DATA_DIR"] = data_dir
    descriptor_cache.PART_SIZE = 5
    barrier = None
    if world_size > 1:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
        barrier = dist.barrier
    said = []
    table = descriptor_cache.cached_descriptors(SMILES, said.append, rank, world_size, barrier)
    assert len(table) == len(SMILES)
    (Path(data_dir) / f"rank-{rank}.log").write_text("\n".join(said))
    if world_size > 1:
        dist.destroy_process_group()


def run_ranks(world_size: int, data_dir: Path, init_file: Path) -> None:
    context = multiprocessing.get_context("fork")  # real processes; forked, so torch is imported once
    ranks = [
        context.Process(target=write_targets, args=(rank, world_size, str(data_dir), str(init_file)))
        for rank in range(world_size)
    ]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join(60)
        assert process.exitcode == 0


def cached_parts(data_dir) -> dict[str, bytes]:
    [folder] = (data_dir / "cache" / "descriptor_targets").iterdir()
    return {path.name: path.read_bytes() for path in sorted(folder.glob("part-*.npy"))}


@pytest.mark.slow
def test_targets_made_by_two_ranks_equal_one_ranks_and_rdkits(tmp_path, monkeypatch):
    two, one = tmp_path / "two", tmp_path / "one"
    run_ranks(2, two, tmp_path / "init")
    run_ranks(1, one, tmp_path / "unused")
    parts = cached_parts(two)
    assert list(parts) == [f"part-{i:05d}.npy" for i in range(3)] and parts == cached_parts(one)
    made = {rank: re.findall(r"part (\d) of 3", (two / f"rank-{rank}.log").read_text()) for rank in (0, 1)}
    assert made == {0: ["1", "3"], 1: ["2"]}  # each rank made its own share, and read the other's
    monkeypatch.setenv("DDPX_DATA_DIR", str(two))
    monkeypatch.setattr(descriptor_cache, "PART_SIZE", 5)
    read = descriptor_cache.cached_descriptors(SMILES, log=pytest.fail).whole()  # all cached: nothing computed
    numpy.testing.assert_array_equal(read, compute_descriptors(SMILES))


def test_a_cache_stopped_half_way_goes_on_and_never_reads_a_half_written_part(tmp_path, monkeypatch):
    monkeypatch.setenv("DDPX_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(descriptor_cache, "PART_SIZE", 5)
    whole = descriptor_cache.cached_descriptors(SMILES, log=lambda _: None).whole()
    [folder] = (tmp_path / "cache" / "descriptor_targets").iterdir()
    (folder / "part-00001.npy").unlink()  # stopped before this part was renamed into place
    (folder / ".part-00001-x.npy").write_bytes(b"\x93NUMPY")  # its temporary file, left half-written
    cut = folder / "part-00002.npy"
    cut.write_bytes(cut.read_bytes()[:100])  # a file cut short (a disk that filled)
    said = []
    again = descriptor_cache.cached_descriptors(SMILES, log=said.append)
    assert "2 part(s)" in said[0] and len(said) == 3  # the two missing parts made again, nothing else
    numpy.testing.assert_array_equal(again.whole(), whole)
    numpy.testing.assert_array_equal(again.rows(numpy.array([11, 0, 7])), whole[[11, 0, 7]])


def test_the_ranks_share_out_the_parts_missing_before_any_rank_wrote_one(tmp_path, monkeypatch):
    """Rank 1 may finish its part while rank 0 still waits at the barrier: rank 0 still makes the
    share it had when every rank had looked (parts 1 and 3 of 3), not what is missing by then."""
    monkeypatch.setenv("DDPX_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(descriptor_cache, "PART_SIZE", 5)
    folder = descriptor_cache.cache_folder() / descriptor_cache.cache_key(SMILES)
    calls = []

    def barrier():  # the other rank, quick: its part (the second) is on disk when rank 0 passes the barrier
        calls.append(1)
        if len(calls) == 1:
            descriptor_cache._make_part(SMILES, 1, folder)

    said = []
    table = descriptor_cache.cached_descriptors(SMILES, said.append, 0, 2, barrier)
    assert re.findall(r"part (\d) of 3", "\n".join(said)) == ["1", "3"] and len(calls) == 2
    numpy.testing.assert_array_equal(table.whole(), compute_descriptors(SMILES))
