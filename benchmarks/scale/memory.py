"""Private memory, sampled from outside: each process's anonymous resident memory (``RssAnon`` of
``/proc/<pid>/status``) read every ``interval`` seconds while it runs, and its peak kept.

Anonymous memory is what a process holds of its own (its heap, its tensors, its Python objects);
pages mapped from files (the memory-mapped graph store and targets, the libraries) are counted in
``RssFile`` instead, and the ranks of one machine share them in the page cache, so they are counted
once for the machine: as the store's size on disk. A rank forked from the spawn launcher's fork
server also counts the pages it still shares with the server (its imports): a little more than its
own. Linux only.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ddpx.launch.signals import rank_processes


def rss_anon_mb(pid: int) -> float | None:
    """The process's anonymous resident memory in MiB, or None once it has gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class PeakSampler:
    """The peak ``RssAnon`` of every rank under ``root`` (the ``ddpx`` process: its descendants that
    run the ddpx worker), or of ``root`` itself with ``ranks=False``, sampled in a thread."""

    def __init__(self, root: int, ranks: bool = True, interval: float = 0.2):
        self.root, self.ranks, self.interval = root, ranks, interval
        self.peaks: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.is_set():
            pids = rank_processes(self.root) if self.ranks else [self.root]
            for pid in pids:
                mb = rss_anon_mb(pid)
                if mb is not None:
                    self.peaks[pid] = max(mb, self.peaks.get(pid, 0.0))
            self._stop.wait(self.interval)

    def peak_mb(self) -> float | None:
        """The highest peak of any one process sampled (None when none was seen)."""
        return max(self.peaks.values()) if self.peaks else None
