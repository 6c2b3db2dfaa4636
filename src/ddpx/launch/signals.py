"""Signals to the ``ddpx`` process while its job runs, passed on as the ranks expect them.

- SIGTERM (a scheduler, ``kill``) stops the job as Ctrl-C does: the launcher passes SIGINT to
  every rank and the run is marked KILLED. Left alone, the process would die at once and leave
  its ranks training.
- SIGUSR1 (a preemption notice: ``scancel --signal=USR1``, a cluster's grace signal) is passed
  to every rank of this machine, which checkpoint at the next agreed step and stop with exit 75;
  ``--resume auto`` continues. Left alone, SIGUSR1 would end the process silently. A sweep or a
  study starts no run after it (:func:`stop_requested`): it stops when its running runs have, and
  says how it goes on.

Ranks are this process's descendants running the ddpx worker (found in ``/proc``, so on Linux).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ddpx.contract.errors import JobFailed

RANK_MARKERS = (b"ddpx.rank.worker", b"spawn_main")  # torchrun's and srun's workers; a spawned rank
NOT_RANKS = (b"torch.distributed.run",)  # torchrun itself names the worker module in its arguments
FORK_SERVER = b"multiprocessing.forkserver"  # the spawn launcher's fork server, and each rank it forked
RELAY_EVERY_S = 0.5  # how often a stop request is passed to ranks that started after it
_STOP_REQUEST = threading.Event()  # SIGUSR1 reached this process, or a run of it stopped on request


def note_stop_request() -> None:
    """A stop on request reached this process (SIGUSR1), or one of its runs stopped on request (exit
    75): the sweep or study it runs starts no run after it."""
    _STOP_REQUEST.set()


def stop_requested() -> bool:
    """Whether a stop on request came since the outermost :func:`signals_reach_the_ranks` began."""
    return _STOP_REQUEST.is_set()


def forget_stop_requests() -> None:
    """A command begins: a stop requested of an earlier one in this process is not its own."""
    _STOP_REQUEST.clear()


def raise_if_stop_requested() -> None:
    """End a sweep or study asked to stop, once none of its runs is running (exit 75, as a run's)."""
    if stop_requested():
        raise JobFailed("stopped on request (SIGUSR1): the running runs checkpointed and stopped", 75)


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


class StopRequestRelay:
    """Passes a stop request (SIGUSR1) to every rank under this process: those running now, and, until
    :meth:`close`, each rank that starts later (a run starting as the request came: its ranks did not
    exist yet), every :data:`RELAY_EVERY_S`. A rank hears it once."""

    def __init__(self) -> None:
        self.reached: set[int] = set()
        self.closed = threading.Event()
        self.relay: threading.Thread | None = None

    def __call__(self, signum=None, frame=None) -> None:
        note_stop_request()
        self.start()

    def start(self) -> None:
        """Reach the ranks running now, and from now on each that starts."""
        self.reach_ranks()
        if self.relay is None:
            self.relay = threading.Thread(target=self._keep_reaching, name="ddpx-stop-relay", daemon=True)
            self.relay.start()

    def reach_ranks(self) -> None:
        for pid in rank_processes():
            if pid not in self.reached:
                self.reached.add(pid)
                try:
                    os.kill(pid, signal.SIGUSR1)
                except ProcessLookupError:
                    pass

    def _keep_reaching(self) -> None:
        while not self.closed.wait(RELAY_EVERY_S):
            self.reach_ranks()

    def close(self) -> None:
        self.closed.set()


_DEPTH = [0]  # how many signals_reach_the_ranks blocks this process is in (a study's, its run's)


@contextmanager
def signals_reach_the_ranks() -> Iterator[None]:
    """While the block runs: SIGTERM interrupts (the launcher stops the ranks), SIGUSR1 is
    passed to every rank, and to each rank that starts before the block ends. The outermost block
    (a command's: from before it plans) begins with no stop requested; a block inside it, where one
    was requested already (while planning, between two runs), passes it to its ranks as they start."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    if _DEPTH[0] == 0:
        forget_stop_requests()
    _DEPTH[0] += 1
    relay = StopRequestRelay()
    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, interrupt)}
    if Path("/proc").is_dir():
        previous[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, relay)
        if stop_requested():
            relay.start()
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        relay.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
