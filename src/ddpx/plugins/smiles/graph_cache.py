"""Molecular graphs from SMILES, made once with Chemprop's featurizer and kept.

**The featurizer.** Chemprop's ``SimpleMoleculeMolGraphFeaturizer`` with its defaults, the ones
``chemprop train`` uses: multi-hot V2 atom features (72 per atom) and bond features (14 per bond,
each bond once in each direction), on the molecule ``chemprop.utils.make_mol`` reads from the
SMILES (hydrogens removed, stereochemistry kept). A SMILES RDKit cannot parse has no graph.

**Packed.** A table's graphs are held as a few arrays (:class:`PackedGraphs`): every atom's
features (float32, as Chemprop makes them), every directed bond's (float32: 0/1 values, exact),
the bond lists and reverse-bond indices (int32, per molecule), and where each molecule starts.
One molecule's graph is Chemprop's ``MolGraph`` of views into them, made when a batch asks.

**Cached, where and how big.**

- In memory, per process: the last table featurized (one entry), so building the data again in
  the same process costs nothing.
- On disk: ``<data folder>/cache/molecule_graphs/<key>/`` (the data folder is ``ddpx.api.data_root()``:
  ``$DDPX_DATA_DIR`` or ``~/.cache/ddpx/data``), one ``.npy`` file per array and ``meta.json``.
  The key is a SHA-256 of the cache format, the featurizer, Chemprop's version and the SMILES in
  order, so another file, another row order, canonicalised SMILES or another Chemprop version get
  their own entry. Size: about 290 bytes per atom and 68 per directed bond, 0.3 KB per molecule
  more or less: BBBP (2,050 molecules) about 20 MB, Tox21 (7,831) about 60 MB, HIV (41,127) about
  450 MB. The files are read memory-mapped, so the ranks of one machine share one copy in the page
  cache. They are written to a temporary folder and renamed into place: ranks that featurize at
  the same moment each write, the first rename wins. Where the folder cannot be written the
  graphs stay in memory only. Nothing else reads the folder; delete it to reclaim the space.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FORMAT = 1
FEATURIZER = (
    "chemprop-simple-v2"  # SimpleMoleculeMolGraphFeaturizer(): MultiHotAtomFeaturizer.v2(), MultiHotBondFeaturizer()
)
ARRAYS = ("V", "E", "edge_index", "rev_edge_index", "atom_offsets", "edge_offsets", "parsed")
_MEMORY: dict[str, PackedGraphs] = {}


@dataclass(frozen=True)
class PackedGraphs:
    """The graphs of a table's molecules, in row order; a row whose SMILES does not parse has
    ``parsed[row] == False`` and no atoms."""

    V: np.ndarray  # (atoms, atom_features) float32
    E: np.ndarray  # (directed bonds, bond_features) float32
    edge_index: np.ndarray  # (2, directed bonds) int32, atom indices within each molecule
    rev_edge_index: np.ndarray  # (directed bonds,) int32, bond indices within each molecule
    atom_offsets: np.ndarray  # (molecules + 1,) int64
    edge_offsets: np.ndarray  # (molecules + 1,) int64
    parsed: np.ndarray  # (molecules,) bool

    @property
    def atom_fdim(self) -> int:
        return int(self.V.shape[1])

    @property
    def bond_fdim(self) -> int:
        return int(self.E.shape[1])

    def graph(self, row: int):
        """Chemprop's ``MolGraph`` of molecule ``row`` (views, no copy)."""
        from chemprop.data import MolGraph

        a0, a1 = self.atom_offsets[row], self.atom_offsets[row + 1]
        e0, e1 = self.edge_offsets[row], self.edge_offsets[row + 1]
        return MolGraph(self.V[a0:a1], self.E[e0:e1], self.edge_index[:, e0:e1], self.rev_edge_index[e0:e1])

    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in ARRAYS)

    def save(self, folder: Path) -> None:
        for name in ARRAYS:
            np.save(folder / f"{name}.npy", getattr(self, name))

    @classmethod
    def load(cls, folder: Path) -> PackedGraphs:
        return cls(**{name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in ARRAYS})


def featurizer():
    """Chemprop's default molecule featurizer (what ``chemprop train`` featurizes with)."""
    from ddpx.plugins.smiles.chemprop_check import import_chemprop

    import_chemprop("a model that reads molecular graphs")
    from chemprop.featurizers import SimpleMoleculeMolGraphFeaturizer

    return SimpleMoleculeMolGraphFeaturizer()


def featurize(smiles: Sequence[str]) -> PackedGraphs:
    """Every SMILES featurized, in order, with Chemprop's featurizer (no cache)."""
    featurize_one = featurizer()
    from chemprop.utils import make_mol

    V, E, edges, reverse, atoms, bonds, parsed = [], [], [], [], [0], [0], []
    for s in smiles:
        try:
            graph = featurize_one(make_mol(s))
        except (RuntimeError, ValueError):  # RDKit cannot parse it (Chemprop raises RuntimeError)
            graph = None
        parsed.append(graph is not None)
        if graph is not None:
            V.append(graph.V)
            E.append(graph.E)
            edges.append(graph.edge_index)
            reverse.append(graph.rev_edge_index)
        atoms.append(atoms[-1] + (len(graph.V) if graph is not None else 0))
        bonds.append(bonds[-1] + (graph.edge_index.shape[1] if graph is not None else 0))
    d_v, d_e = featurize_one.atom_fdim, featurize_one.bond_fdim
    return PackedGraphs(
        V=np.concatenate(V).astype(np.float32, copy=False) if V else np.zeros((0, d_v), np.float32),
        E=np.concatenate(E).astype(np.float32) if E else np.zeros((0, d_e), np.float32),
        edge_index=np.hstack(edges).astype(np.int32) if edges else np.zeros((2, 0), np.int32),
        rev_edge_index=np.concatenate(reverse).astype(np.int32) if reverse else np.zeros(0, np.int32),
        atom_offsets=np.asarray(atoms, np.int64),
        edge_offsets=np.asarray(bonds, np.int64),
        parsed=np.asarray(parsed, bool),
    )


def cache_key(smiles: Sequence[str], featurizer: str = FEATURIZER) -> str:
    """The cache entry of ``smiles`` featurized by ``featurizer`` with this Chemprop version."""
    from ddpx.plugins.smiles.chemprop_check import import_chemprop

    version = import_chemprop("a model that reads molecular graphs").__version__
    digest = hashlib.sha256(f"{FORMAT}\n{featurizer}\n{version}\n".encode())
    for s in smiles:
        digest.update(s.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()[:32]


def cache_folder() -> Path:
    from ddpx.api import data_root

    return data_root() / "cache" / "molecule_graphs"


def cached_graphs(smiles: Sequence[str], log: Callable[[str], None] = print) -> PackedGraphs:
    """The graphs of ``smiles``: from this process's memory, else from the disk cache, else
    featurized now (and written there)."""
    key = cache_key(smiles)
    if key in _MEMORY:
        return _MEMORY[key]
    folder = cache_folder() / key
    graphs = _read(folder)
    if graphs is None:
        log(f"featurizing {len(smiles)} molecules with Chemprop's featurizer (once: the graphs are kept in {folder})")
        started = time.perf_counter()  # Chemprop is imported already (cache_key)
        graphs = featurize(smiles)
        if _write(graphs, folder, seconds=time.perf_counter() - started):
            graphs = _read(folder) or graphs  # memory-mapped: the ranks of a machine share one copy
    _MEMORY.clear()  # one table at a time: a sweep of one file keeps one copy
    _MEMORY[key] = graphs
    return graphs


def _read(folder: Path) -> PackedGraphs | None:
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            return None
        return PackedGraphs.load(folder)
    except (OSError, ValueError):
        return None


def _write(graphs: PackedGraphs, folder: Path, seconds: float) -> bool:
    """Write atomically (a temporary folder renamed); ``False`` where the folder cannot be written."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    except OSError:
        return False
    try:
        graphs.save(temporary)
        meta = {
            "format": FORMAT,
            "featurizer": FEATURIZER,
            "molecules": len(graphs.parsed),
            "atoms": len(graphs.V),
            "bonds": len(graphs.E),
            "bytes": graphs.nbytes(),
            "featurize_seconds": round(seconds, 2),
        }
        (temporary / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        os.rename(temporary, folder)
        return True
    except OSError:  # another process renamed its copy first, or the disk is full: the graphs are in memory
        shutil.rmtree(temporary, ignore_errors=True)
        return folder.is_dir()
