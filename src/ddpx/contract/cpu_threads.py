"""How many CPU threads each rank uses: the machine's cores shared evenly between its local ranks.

Two ranks on two cores that each start a thread per core oversubscribe the machine and both run
slower. Launchers that start the ranks themselves set ``OMP_NUM_THREADS`` to the share before
the ranks import torch (torchrun does so too, with 1); a rank started without it sets its own
thread count (``_limit_threads`` in :mod:`ddpx.rank.worker`). A value the user exported always wins.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


def cpu_share(local_ranks: int) -> int:
    """Threads per rank when ``local_ranks`` ranks share this machine's cores (at least 1)."""
    return max(1, (os.cpu_count() or 1) // max(1, local_ranks))


@contextmanager
def threads_per_rank(local_ranks: int) -> Iterator[None]:
    """Processes started inside this block get ``OMP_NUM_THREADS`` = their :func:`cpu_share`
    (unless the user set it). The variable must be there when a process starts: its thread
    pools are sized as it imports torch, before any of its own code runs."""
    if "OMP_NUM_THREADS" in os.environ:
        yield
        return
    os.environ["OMP_NUM_THREADS"] = str(cpu_share(local_ranks))
    try:
        yield
    finally:
        del os.environ["OMP_NUM_THREADS"]
