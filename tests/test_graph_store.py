"""The compact graph store: every molecule's graph equal to Chemprop's own on real files; a store
written by two ranks equal to one written by one; a store stopped half-way goes on, never reading
a half-written part."""

from __future__ import annotations

import csv
import gzip
import multiprocessing
import shutil
from pathlib import Path

import numpy
import pytest
from real_data import BBBP, TOX21, bbbp_candidates, tox21_candidates, where_looked

chemprop = pytest.importorskip("chemprop", reason="the graphs need Chemprop (pip install 'ddpx[chem]')")

from ddpx.plugins.smiles import graph_cache  # noqa: E402
from ddpx.plugins.smiles.graph_store import ARRAYS, featurize_part  # noqa: E402

SMALL = ["CCO", "c1ccccc1O", "C1CC", "[Na+].[Cl-]", "C[C@H](N)C(=O)O", "O=C=O", "CCN(CC)CC", "FC(F)(F)c1ccncc1"] * 5


def smiles_of(path: Path) -> list[str]:
    opened = gzip.open if path.suffix == ".gz" else open  # ddpx's own download of Tox21 is gzipped
    with opened(path, "rt", newline="", encoding="utf-8") as fh:
        return [row["smiles"] for row in csv.DictReader(fh)]


@pytest.mark.parametrize(
    ("path", "candidates"), [(BBBP, bbbp_candidates), (TOX21, tox21_candidates)], ids=["BBBP", "Tox21"]
)
def test_every_graph_equals_chemprops_own_on_real_files(path, candidates):
    if path is None:
        pytest.skip(f"no real file at {where_looked(candidates())} (set DDPX_DATA_DIR; CI has ../shared/data)")
    smiles = smiles_of(path)
    part = featurize_part(smiles)
    featurize = graph_cache.featurizer()
    for row, text in enumerate(smiles):
        try:
            theirs = featurize(chemprop.utils.make_mol(text))
        except (RuntimeError, ValueError):
            assert not part.parsed[row]
            continue
        ours = part.graph(row)
        assert numpy.array_equal(ours.V, theirs.V.astype(numpy.float32)) and ours.V.dtype == numpy.float32
        assert numpy.array_equal(ours.E, theirs.E.astype(numpy.float32)) and ours.E.dtype == numpy.float32
        assert numpy.array_equal(ours.edge_index, theirs.edge_index)
        assert numpy.array_equal(ours.rev_edge_index, theirs.rev_edge_index)
    per_molecule = part.nbytes() / len(smiles)
    assert per_molecule < 400, f"{per_molecule:.0f} bytes per molecule"  # 9.4 KB as float32 copies


def write_store(data_dir: str, rank: int, world_size: int, barrier) -> None:
    import os

    os.environ["DDPX_DATA_DIR"] = data_dir
    graph_cache.PART_SIZE = 7
    graph_cache._MEMORY.clear()
    graph_cache.cached_graphs(SMALL, log=lambda _: None, rank=rank, world_size=world_size, barrier=barrier)


def store_files(data_dir: Path) -> dict[str, bytes]:
    [folder] = (data_dir / "cache" / "molecule_graphs").iterdir()
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*.npy"))}


def test_a_store_written_by_two_ranks_equals_one_written_by_one(tmp_path):
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    ranks = [
        context.Process(target=write_store, args=(str(tmp_path / "two"), rank, 2, barrier.wait)) for rank in (0, 1)
    ]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join(60)
        assert process.exitcode == 0
    alone = context.Process(target=write_store, args=(str(tmp_path / "one"), 0, 1, None))
    alone.start()
    alone.join(60)
    two, one = store_files(tmp_path / "two"), store_files(tmp_path / "one")
    assert len(two) == 6 * len(ARRAYS) and two == one  # 40 molecules in parts of 7


def test_a_store_stopped_half_way_goes_on_and_never_reads_a_half_written_part(tmp_path, monkeypatch):
    monkeypatch.setenv("DDPX_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(graph_cache, "PART_SIZE", 7)
    graph_cache._MEMORY.clear()
    whole = graph_cache.cached_graphs(SMALL, log=lambda _: None)
    before = [[numpy.array(a) for a in whole.graph(row)] if whole.parsed[row] else None for row in range(len(SMALL))]
    [folder] = (tmp_path / "cache" / "molecule_graphs").iterdir()
    shutil.rmtree(folder / "part-00002")  # stopped before part 2 was renamed into place ...
    half = folder / ".part-00002-x1y2"  # ... while it was being written
    half.mkdir()
    (half / "atom_codes.npy").write_bytes(b"\x93NUMPY half")
    (folder / "part-00004" / "bond_atoms.npy").write_bytes(b"")  # and a part whose file is unreadable
    graph_cache._MEMORY.clear()
    said = []
    again = graph_cache.cached_graphs(SMALL, log=said.append)
    assert "2 part(s)" in said[0]  # parts 2 and 4 made again, the others read
    for row, graph in enumerate(before):
        if graph is not None:
            assert all(numpy.array_equal(a, b) for a, b in zip(again.graph(row), graph))
    assert not again.parsed[2] and isinstance(again.parts[0].atom_codes, numpy.memmap)
