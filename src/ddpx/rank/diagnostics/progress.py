"""What rank 0 shows while a job runs: a progress bar per epoch and one line per epoch.

Other ranks show nothing. With no terminal (a log file, CI), the bar is not drawn and only the
per-epoch lines are printed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ddpx.rank.diagnostics.phase_clock import PHASES


class RankConsole:
    """Rank 0 prints; every other rank is silent."""

    def __init__(self, rank: int):
        self.enabled = rank == 0
        self.console = Console(quiet=not self.enabled, highlight=False)

    def print(self, *args, **kwargs) -> None:
        kwargs.setdefault("soft_wrap", True)
        self.console.print(*args, **kwargs)

    @contextmanager
    def epoch_bar(self, epoch: int, max_epochs: int, steps: int) -> Iterator[EpochBar]:
        live = self.enabled and self.console.is_terminal
        progress = Progress(
            TextColumn(f"epoch {epoch}/{max_epochs}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            disable=not live,
        )
        with progress:
            task = progress.add_task("train", total=steps, loss="-")
            yield EpochBar(progress, task, live)

    def epoch_line(self, epoch: int, max_epochs: int, metrics: Mapping[str, float], best: bool) -> None:
        parts = [f"epoch {epoch}/{max_epochs}"]
        for key, value in metrics.items():
            if key == "samples_per_s":
                parts.append(f"{value:,.0f} samples/s")
            elif key == "epoch_s":
                parts.append(f"{value:.2f}s")
            elif key.removesuffix("_s") in PHASES:
                parts.append(f"{key.removesuffix('_s')} {value:.2f}s")
            elif key == "lr":
                parts.append(f"lr {value:.3g}")
            else:
                parts.append(f"{key} {value:.4f}")
        self.print("  ".join(parts) + ("  [green]* best[/green]" if best else ""), soft_wrap=True)


class EpochBar:
    """Advances the bar by one step. The loss it shows is read only when the bar is drawn, and at
    most every ``LOSS_EVERY_S`` seconds: reading a number off a GPU waits for every step queued
    before it, so reading it each step would stop the host from running ahead of the device. It is
    read detached from the graph (a tensor that requires grad warns when read as a number)."""

    LOSS_EVERY_S = 0.5

    def __init__(self, progress: Progress, task, live: bool, clock: Callable[[], float] = time.monotonic):
        self._progress = progress
        self._task = task
        self._live = live
        self._clock = clock
        self._loss_read_at: float | None = None

    def advance(self, loss=None) -> None:
        if not self._live:
            return
        now = self._clock()
        if loss is None or (self._loss_read_at is not None and now - self._loss_read_at < self.LOSS_EVERY_S):
            self._progress.advance(self._task)
            return
        self._loss_read_at = now
        self._progress.update(self._task, advance=1, loss=f"{float(loss.detach()):.4f}")
