"""Signals to the ``ddpx`` process while its job runs, passed on as the ranks expect them.

- SIGTERM (a scheduler, ``kill``) stops the job as Ctrl-C does: the launcher passes SIGINT to
  every rank and the run is marked KILLED. Left alone, the process would die at once and leave
  its ranks training.
- SIGUSR1 (a preemption notice: ``scancel --signal=USR1``, a cluster's grace signal) is passed
  to every rank of this machine, which checkpoint at the next agreed step and stop with exit 75;
  ``--resume auto`` continues. Left alone, SIGUSR1 would end the process silently.

Ranks are this process's descendants running the ddpx worker (found in ``/proc``, so on Linux).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RANK_MARKERS = (b"ddpx.rank.worker", b"spawn_main")  # torchrun's and srun's workers; a spawned rank
NOT_RANKS = (b"torch.distributed.run",)  # torchrun itself names the worker module in its arguments
FORK_SERVER = b"multiprocessing.forkserver"  # the spawn launcher's fork server, and each rank it forked


def _children_by_parent() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    return children


def rank_processes(root: int | None = None) -> list[int]:
    """The pids of the ranks under ``root`` (this process)."""
    children, found, todo = _children_by_parent(), [], [root or os.getpid()]
    commands: dict[int, bytes] = {}
    while todo:
        parent = todo.pop()
        for pid in children.get(parent, []):
            todo.append(pid)
            try:
                command = commands[pid] = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if FORK_SERVER in command:  # the server's children are ranks; the server is not
                if FORK_SERVER in commands.get(parent, b""):
                    found.append(pid)
            elif any(m in command for m in RANK_MARKERS) and not any(m in command for m in NOT_RANKS):
                found.append(pid)
    return found


@contextmanager
def signals_reach_the_ranks() -> Iterator[None]:
    """While the block runs: SIGTERM interrupts (the launcher stops the ranks), SIGUSR1 is
    passed to every rank."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    def preempt(signum, frame):
        for pid in rank_processes():
            try:
                os.kill(pid, signal.SIGUSR1)
            except ProcessLookupError:
                pass

    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, interrupt)}
    if Path("/proc").is_dir():
        previous[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, preempt)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
