"""The pretraining targets of a table, computed once, shared out over the ranks and kept beside the
graphs.

``<data folder>/cache/descriptor_targets/<key>/`` holds one ``part-NNNNN.npy`` of float32 rows per
part of 50 000 molecules, and ``meta.json`` (the descriptors' names, RDKit's version, the time
taken). The key is a SHA-256 of the cache format, the descriptor set, RDKit's version and the
SMILES in order, as the graphs' (:mod:`ddpx.plugins.smiles.graph_cache`) is. The ranks look at the
cache together, share the missing parts out (rank r the missing parts r, r + world size, ...), wait
for each other, then read the whole table; a part still missing then (another machine's disk, a write that failed) a rank computes
itself. Each part is written to a temporary file and renamed into place, so a part is complete
or absent: a table stopped half-way goes on from the parts it has. The parts are read
memory-mapped. Where the folder cannot be written the targets stay in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ddpx.plugins.smiles.descriptors import NAMES, SET, compute_descriptors
from ddpx.plugins.smiles.shared_parts import PartFiles, shared_parts

FORMAT = 1
PART_SIZE = 50_000


class DescriptorTable:
    """A table's descriptor rows over parts of ``part_size`` consecutive molecules."""

    def __init__(self, parts: list[np.ndarray], part_size: int):
        self.parts, self.part_size = parts, part_size

    def __len__(self) -> int:
        return sum(len(part) for part in self.parts)

    def row(self, index: int) -> np.ndarray:
        return self.parts[index // self.part_size][index % self.part_size]

    def rows(self, indices: np.ndarray) -> np.ndarray:
        """The rows ``indices``, in that order, as one array (float32)."""
        indices = np.asarray(indices, dtype=np.int64)
        out = np.empty((len(indices), len(NAMES)), dtype=np.float32)
        which = indices // self.part_size
        for part in np.unique(which):
            here = which == part
            out[here] = self.parts[part][indices[here] % self.part_size]
        return out

    def whole(self) -> np.ndarray:
        return np.concatenate([np.asarray(part) for part in self.parts]) if self.parts else np.zeros((0, len(NAMES)))


def cache_key(smiles: Sequence[str]) -> str:
    from rdkit import rdBase

    digest = hashlib.sha256(f"{FORMAT}\n{SET}\n{','.join(NAMES)}\n{rdBase.rdkitVersion}\n".encode())
    for s in smiles:
        digest.update(s.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()[:32]


def cache_folder() -> Path:
    from ddpx.api import data_root

    return data_root() / "cache" / "descriptor_targets"


def cached_descriptors(
    smiles: Sequence[str],
    log: Callable[[str], None] = print,
    rank: int = 0,
    world_size: int = 1,
    barrier: Callable[[], None] | None = None,
) -> DescriptorTable:
    """The descriptor rows of ``smiles``: from the disk cache, the ranks computing the parts it
    lacks between them (and writing them there)."""
    folder = cache_folder() / cache_key(smiles)
    count = max(1, -(-len(smiles) // PART_SIZE))

    def announce(missing: int) -> None:
        log(
            f"computing {len(NAMES)} RDKit descriptors of {len(smiles)} molecules as pretraining targets "
            f"({missing} part(s) of up to {PART_SIZE} over {world_size} rank(s); once: they are kept in {folder})"
        )

    parts = shared_parts(FILES, smiles, folder, count, announce, log, rank, world_size, barrier)
    return DescriptorTable(parts, PART_SIZE)


def _part_path(folder: Path, index: int) -> Path:
    return folder / f"part-{index:05d}.npy"


def _read_part(folder: Path, index: int) -> np.ndarray | None:
    try:
        part = np.load(_part_path(folder, index), mmap_mode="r")
    except (OSError, ValueError, EOFError):  # absent, or a file cut short: made again
        return None
    return part if part.ndim == 2 and part.shape[1] == len(NAMES) else None


def _make_part(smiles: Sequence[str], index: int, folder: Path) -> np.ndarray:
    """Compute part ``index`` and write it (a temporary file renamed into place); the part read
    memory-mapped from disk where that worked, else in memory."""
    rows = compute_descriptors(smiles[index * PART_SIZE : (index + 1) * PART_SIZE])
    target = _part_path(folder, index)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".npy", dir=folder)
    except OSError:
        return rows
    try:
        with os.fdopen(handle, "wb") as out:
            np.save(out, rows)
        os.replace(temporary, target)
    except OSError:  # the disk is full
        Path(temporary).unlink(missing_ok=True)
    part = _read_part(folder, index)
    return part if part is not None else rows


def _write_meta(folder: Path, molecules: int, parts: int, seconds: float) -> None:
    from rdkit import rdBase

    meta = {
        "format": FORMAT,
        "set": SET,
        "names": list(NAMES),
        "rdkit": rdBase.rdkitVersion,
        "molecules": molecules,
        "parts": parts,
        "part_size": PART_SIZE,
        "compute_seconds": round(seconds, 2),
    }
    try:
        (folder / "meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    except OSError:
        pass


FILES = PartFiles(_read_part, _make_part, _write_meta)
