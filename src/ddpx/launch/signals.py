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
from contextlib import ExitStack, contextmanager
from pathlib import Path

from ddpx.contract.errors import JobFailed

RANK_MARKERS = (b"ddpx.rank.worker", b"spawn_main")  # torchrun's workers; a spawned rank
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


def stopped_on_request() -> JobFailed:
    """What ends a sweep or study asked to stop with work left (exit 75, as a run's); the command
    says how it goes on."""
    return JobFailed("stopped on request (SIGUSR1): the runs under way checkpointed and stopped", 75)


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


SIGUSR1_BIT = 1 << (signal.SIGUSR1 - 1)  # in /proc/PID/status's signal masks


def hears_stop_requests(pid: int) -> bool:
    """Whether SIGUSR1 to ``pid`` is a stop request it will read, not the default action that ends
    it: the process catches it (its handler is in place) or holds it blocked until it is (a rank forked
    by the spawn launcher's fork server). A rank still importing (a torchrun worker) does neither."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    masks = dict(line.split(":\t", 1) for line in status.splitlines() if line.startswith(("SigBlk", "SigCgt")))
    return any(int(masks.get(name, "0"), 16) & SIGUSR1_BIT for name in ("SigBlk", "SigCgt"))


class StopRequestRelay:
    """Passes a stop request (SIGUSR1) to every rank under this process: those running now and, until
    :meth:`close`, each that starts later (a run starting as the request came), checked every
    :data:`RELAY_EVERY_S`; each rank once, when it hears such requests (:func:`hears_stop_requests`).
    The signal handler only notes the request; a thread of the block does the rest."""

    def __init__(self) -> None:
        self.reached: set[int] = set()
        self.requested, self.closed = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._relay, name="ddpx-stop-relay", daemon=True)

    def __call__(self, signum=None, frame=None) -> None:
        note_stop_request()
        self.requested.set()

    def _relay(self) -> None:
        self.requested.wait()
        while not self.closed.is_set():
            for pid in rank_processes():
                if pid not in self.reached and hears_stop_requests(pid):
                    self.reached.add(pid)
                    try:
                        os.kill(pid, signal.SIGUSR1)
                    except ProcessLookupError:
                        pass
            self.closed.wait(RELAY_EVERY_S)

    def close(self) -> None:
        self.closed.set()
        self.requested.set()  # the thread, if it still waits, ends


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

    relay, previous = StopRequestRelay(), {}
    with ExitStack() as undo:
        if _DEPTH[0] == 0:
            forget_stop_requests()
        _DEPTH[0] += 1
        undo.callback(_DEPTH.__setitem__, 0, _DEPTH[0] - 1)
        undo.callback(lambda: [signal.signal(signum, handler) for signum, handler in previous.items()])
        undo.callback(relay.close)
        relay.thread.start()
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, interrupt)
        if Path("/proc").is_dir():
            previous[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, relay)
            if stop_requested():
                relay.requested.set()
        yield
