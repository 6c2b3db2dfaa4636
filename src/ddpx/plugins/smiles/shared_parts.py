"""A store kept on disk in numbered parts, the parts it lacks made by the ranks between them.

Every rank looks at the store first, and only then do the ranks wait for each other: so no rank has
written a part before every rank has looked, and they all agree on the missing parts. Rank r makes
the missing parts r, r + world size, ...; after a second wait every rank reads the parts the others
made, and makes itself any it still cannot read (another machine's disk, a write that failed).
The graphs (:mod:`ddpx.plugins.smiles.graph_cache`) and the descriptor targets
(:mod:`ddpx.plugins.smiles.descriptor_cache`) are kept this way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class PartFiles:
    """How one kind of store keeps its parts in a folder: ``read(folder, i)`` gives part ``i`` from
    disk or ``None``; ``make(smiles, i, folder)`` makes it and writes it; ``write_meta(folder,
    molecules, parts, seconds)`` describes the store once its missing parts are made."""

    read: Callable[[Path, int], Any | None]
    make: Callable[[Sequence[str], int, Path], Any]
    write_meta: Callable[[Path, int, int, float], None]


def shared_parts(
    files: PartFiles,
    smiles: Sequence[str],
    folder: Path,
    count: int,
    announce: Callable[[int], None],
    log: Callable[[str], None],
    rank: int = 0,
    world_size: int = 1,
    barrier: Callable[[], None] | None = None,
) -> list[Any]:
    """The ``count`` parts of ``smiles``'s store in ``folder``, in order; ``announce(n)`` is called
    once before ``n`` missing parts are made."""
    parts = {i: part for i in range(count) if (part := files.read(folder, i)) is not None}
    together = barrier is not None and world_size > 1
    if together:
        barrier()  # every rank has looked before any rank writes: they share out the same missing parts
    missing = [i for i in range(count) if i not in parts]
    if not missing:
        return [parts[i] for i in range(count)]
    announce(len(missing))
    started = time.perf_counter()
    mine = missing[rank::world_size]
    for done, i in enumerate(mine, start=1):
        parts[i] = files.make(smiles, i, folder)
        log(f"  part {i + 1} of {count}: {done} of this rank's {len(mine)}, {time.perf_counter() - started:.0f} s")
    if together:
        barrier()
    for i in missing:
        again = files.read(folder, i)  # read back from disk (memory-mapped), a part of its own too
        if again is not None:
            parts[i] = again
        elif i not in mine:
            parts[i] = files.make(smiles, i, folder)
    files.write_meta(folder, len(smiles), count, time.perf_counter() - started)
    return [parts[i] for i in range(count)]
