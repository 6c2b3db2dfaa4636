"""Molecular graphs from SMILES, made once with Chemprop's featurizer and kept.

**The featurizer.** Chemprop's ``SimpleMoleculeMolGraphFeaturizer`` with its defaults, the ones
``chemprop train`` uses: multi-hot V2 atom features (72 per atom) and bond features (14 per bond,
each bond once in each direction), on the molecule ``chemprop.utils.make_mol`` reads from the
SMILES (hydrogens removed, stereochemistry kept). A SMILES RDKit cannot parse has no graph.

**Stored compactly** (:mod:`ddpx.plugins.smiles.graph_store`): distinct atom and bond rows once,
a code per atom and bond, the bonds' atom pairs; a molecule's ``MolGraph`` is rebuilt, value for
value, when a batch asks. About 0.2 KB per molecule (MOSES-sized molecules), where float32 copies
of Chemprop's arrays took 9 KB.

**Cached, where and how.**

- In memory, per process: the last table featurized (one entry), so building the data again in
  the same process costs nothing.
- On disk: ``<data folder>/cache/molecule_graphs/<key>/`` (the data folder is ``ddpx.api.data_root()``:
  ``$DDPX_DATA_DIR`` or ``~/.cache/ddpx/data``), one folder per part of 50 000 molecules and
  ``meta.json``. The key is a SHA-256 of the store's format, the featurizer, Chemprop's version and
  the SMILES in order, so another file, another row order, canonicalised SMILES or another
  Chemprop version get their own entry. The ranks look at the store together (so they agree on
  the parts it lacks), share the featurizing of those out, part by part (rank r the missing parts
  r, r + world size, ...), then wait for each other and read the whole store; a part a
  rank finds missing after that (another machine's disk, a write that failed) it makes itself.
  Each part is written to a temporary folder and renamed into place, so a part is complete or
  absent: a store stopped half-way goes on from the parts it has, and nothing reads a half-written
  one. The files are read memory-mapped, so the ranks of one machine share one copy in the page
  cache and a rank's own memory does not grow with the number of molecules. Where the folder
  cannot be written the graphs stay in memory only. Delete the folder to reclaim the space.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from ddpx.plugins.smiles.graph_store import GraphPart, GraphStore, featurize_part, featurizer
from ddpx.plugins.smiles.shared_parts import PartFiles, shared_parts

FORMAT = 2
FEATURIZER = (
    "chemprop-simple-v2"  # SimpleMoleculeMolGraphFeaturizer(): MultiHotAtomFeaturizer.v2(), MultiHotBondFeaturizer()
)
PART_SIZE = 50_000
_MEMORY: dict[str, GraphStore] = {}


def featurize(smiles: Sequence[str]) -> GraphStore:
    """Every SMILES featurized, in order, with Chemprop's featurizer (no cache, in memory)."""
    one = featurizer()
    return GraphStore([featurize_part(smiles)], max(1, len(smiles)), one.atom_fdim, one.bond_fdim)


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


def cached_graphs(
    smiles: Sequence[str],
    log: Callable[[str], None] = print,
    rank: int = 0,
    world_size: int = 1,
    barrier: Callable[[], None] | None = None,
) -> GraphStore:
    """The graphs of ``smiles``: from this process's memory, else from the disk store (the ranks
    featurizing the parts it lacks between them), written there as they are made."""
    key = cache_key(smiles)
    if key in _MEMORY:
        return _MEMORY[key]
    folder = cache_folder() / key
    count = max(1, -(-len(smiles) // PART_SIZE))

    def announce(missing: int) -> None:
        log(
            f"featurizing {len(smiles)} molecules with Chemprop's featurizer ({missing} part(s) of up to "
            f"{PART_SIZE} over {world_size} rank(s); once: they are kept in {folder})"
        )

    parts = shared_parts(FILES, smiles, folder, count, announce, log, rank, world_size, barrier)
    one = featurizer()
    store = GraphStore(parts, PART_SIZE, one.atom_fdim, one.bond_fdim)
    _MEMORY.clear()  # one table at a time: a sweep of one file keeps one copy
    _MEMORY[key] = store
    return store


def _part_folder(folder: Path, index: int) -> Path:
    return folder / f"part-{index:05d}"


def _read_part(folder: Path, index: int) -> GraphPart | None:
    try:
        return GraphPart.load(_part_folder(folder, index))
    except (OSError, ValueError, EOFError):  # absent, or a file cut short: made again
        return None


def _make_part(smiles: Sequence[str], index: int, folder: Path) -> GraphPart:
    """Featurize part ``index`` and write it (a temporary folder renamed into place); the part
    memory-mapped from disk where that worked, else in memory."""
    part = featurize_part(smiles[index * PART_SIZE : (index + 1) * PART_SIZE])
    target = _part_folder(folder, index)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=folder))
    except OSError:
        return part
    try:
        part.save(temporary)
        if target.exists() and _read_part(folder, index) is None:
            shutil.rmtree(target)  # a part with a damaged file: replaced
        os.rename(temporary, target)
    except OSError:  # another rank renamed its copy first, or the disk is full
        shutil.rmtree(temporary, ignore_errors=True)
    return _read_part(folder, index) or part


def _write_meta(folder: Path, molecules: int, parts: int, seconds: float) -> None:
    meta = {
        "format": FORMAT,
        "featurizer": FEATURIZER,
        "molecules": molecules,
        "parts": parts,
        "part_size": PART_SIZE,
        "featurize_seconds": round(seconds, 2),
    }
    try:
        (folder / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    except OSError:
        pass


FILES = PartFiles(_read_part, _make_part, _write_meta)
