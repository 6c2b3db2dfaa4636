"""Stall reports: where each rank is when a job stops making progress.

A rank that hangs (a deadlock in plugin code, a peer that never reaches a collective, a stuck
filesystem) otherwise prints nothing until the collective timeout ends the job — 30 minutes by
default. Every rank keeps a :data:`BEACON`: the phase it is in (``training, epoch 2, step 57``),
the collective it waits in, if any, and since when. A watcher thread per rank notices when its
beacon has not moved for ``--stall-report`` seconds and writes ``stalls/rank-N.json`` in the run
folder (removed again when the rank moves on). Rank 0 prints every stalled rank's record as one
report, and the launcher adds the last report to the job's error if the job then fails, so the
hanging rank is named even when the error itself is a peer's timeout.

Updating the beacon costs an attribute write and a clock read: cheap enough for every step.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ddpx.records.stalls import clear_stalls, describe_stalls, read_stalls, stall_file, write_stall


class Beacon:
    """This rank's phase (a template whose ``{}`` is filled with the latest detail, such as the
    step), the collective it waits in, and when any of them last changed."""

    def __init__(self) -> None:
        self.phase, self.detail, self.collective = "starting", None, None
        self.since = time.monotonic()

    def at(self, phase: str, detail: object = None) -> None:
        self.phase, self.detail, self.collective = phase, detail, None
        self.since = time.monotonic()

    def progress(self, detail: object) -> None:
        self.detail, self.since = detail, time.monotonic()

    def touch(self) -> None:
        """Progress within the same phase (another evaluation batch)."""
        self.since = time.monotonic()

    @contextmanager
    def waiting_in(self, collective: str) -> Iterator[None]:
        self.collective, self.since = collective, time.monotonic()
        try:
            yield
        finally:
            self.collective, self.since = None, time.monotonic()

    def where(self) -> str:
        text = self.phase.format(self.detail) if "{}" in self.phase else self.phase
        return f"{text}, waiting in {self.collective}" if self.collective else text


BEACON = Beacon()


def progress_log(say: Callable[[str], None], beacon: Beacon = BEACON) -> Callable[[str], None]:
    """``say``, which also counts as this rank's progress: a plugin that reports how far it has come
    (a part of a large data set featurized) is not a stalled rank, however long its phase lasts."""

    def log(text: str) -> None:
        beacon.touch()
        say(text)

    return log


class StallWatcher(threading.Thread):
    """Writes this rank's stall record while its beacon stands still; on rank 0 also prints the
    stalled ranks' records (``report``) each time the quiet period has passed again."""

    def __init__(
        self,
        run_dir: Path,
        path: Path,
        rank: int,
        quiet_s: float,
        report: Callable[[str], None] | None,
        beacon: Beacon = BEACON,
    ):
        super().__init__(name="ddpx-stall-watcher", daemon=True)
        self.path = path  # this rank's record
        self.run_dir, self.rank, self.quiet_s, self.report, self.beacon = run_dir, rank, quiet_s, report, beacon
        self.stopped = threading.Event()
        self._reported_at = 0.0

    def run(self) -> None:
        poll = min(1.0, self.quiet_s / 4)
        while not self.stopped.wait(poll):
            quiet = time.monotonic() - self.beacon.since
            if quiet >= self.quiet_s:
                self._record(quiet)
            elif self.path.exists():
                self.path.unlink(missing_ok=True)
            if self.report is not None:
                self._maybe_report()

    def _record(self, quiet: float) -> None:
        import socket

        write_stall(
            self.path,
            {
                "rank": self.rank,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "where": self.beacon.where(),
                "quiet_s": quiet,
            },
        )

    def _maybe_report(self) -> None:
        now = time.monotonic()
        if now - self._reported_at < self.quiet_s:
            return
        records = read_stalls(self.run_dir)
        if records:
            self._reported_at = now
            self.report(describe_stalls(records))

    def stop(self, forget: bool) -> None:
        """Stop watching; ``forget`` the record too (a rank that failed keeps it for the
        launcher's error message)."""
        self.stopped.set()
        self.join(timeout=5)
        if forget:
            self.path.unlink(missing_ok=True)


@contextmanager
def watching_for_stalls(
    run_dir: Path, rank: int, quiet_s: float, report: Callable[[str], None] | None
) -> Iterator[None]:
    """Watch this rank's beacon while the block runs (``quiet_s`` 0: not at all)."""
    if not quiet_s:
        yield
        return
    if rank == 0:
        clear_stalls(run_dir)  # an earlier attempt's (torchrun restarts the ranks in the same folder)
    path = stall_file(run_dir, rank)
    watcher = StallWatcher(run_dir, path, rank, quiet_s, report)
    watcher.start()
    try:
        yield
    except BaseException:
        watcher.stop(forget=False)
        raise
    watcher.stop(forget=True)
