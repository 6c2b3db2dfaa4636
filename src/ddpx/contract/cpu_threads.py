"""How many CPU threads each rank uses, and what its idle threads do.

Two ranks on two cores that each start a thread per core oversubscribe the machine and both run
slower. Launchers that start the ranks themselves set ``OMP_NUM_THREADS`` to the share before
the ranks import torch (torchrun does so too, with 1); a rank started without it sets its own
thread count (``_limit_threads`` in :mod:`ddpx.rank.worker`).

Every rank also starts with ``OMP_WAIT_POLICY=PASSIVE``: a thread of torch's OpenMP pool that has
no work sleeps at once instead of spinning for it. Beside another busy process (a second job, a
Chemprop run) the spinning threads take the cores from the working ones: two one-rank
``bbbp_dmpnn`` jobs of two threads each on 2 cores got 6.9 epochs a minute done together
spinning, 14.6 with ``PASSIVE``; alone a job lost about 6 % with it (12.4 against 13.2;
``docs/performance.md``, Two jobs on one machine). The variable must be there when the process
loads torch's OpenMP library, which reads it once.

A value the user exported always wins, for either variable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

IDLE_THREADS_SLEEP = {"OMP_WAIT_POLICY": "PASSIVE"}
# how libgomp's idle threads wait; read once, as a process loads torch (the spin count overrides the policy's)
OPENMP_WAITING = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def cpu_share(local_ranks: int) -> int:
    """Threads per rank when ``local_ranks`` ranks share this machine's cores (at least 1)."""
    return max(1, (os.cpu_count() or 1) // max(1, local_ranks))


@contextmanager
def _environment_unless_set(values: dict[str, str]) -> Iterator[None]:
    """Processes started inside this block get ``values`` in their environment, each one the
    user has not set; this process's environment is as it was after the block."""
    added = {name: value for name, value in values.items() if name not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def threads_per_rank(local_ranks: int):
    """Processes started inside this block get ``OMP_NUM_THREADS`` = their :func:`cpu_share`
    and ``OMP_WAIT_POLICY=PASSIVE`` (each unless the user set it). Both must be there when a
    process starts: its thread pools are sized as it imports torch, before any of its own code runs."""
    return _environment_unless_set({"OMP_NUM_THREADS": str(cpu_share(local_ranks)), **IDLE_THREADS_SLEEP})


def idle_threads_sleep():
    """Processes started inside this block, and torch first imported in it, get
    ``OMP_WAIT_POLICY=PASSIVE`` (unless the user set it): for a launcher whose own tool sizes the
    ranks' threads (torchrun), and a rank its scheduler started (a Slurm task)."""
    return _environment_unless_set(IDLE_THREADS_SLEEP)
