"""What rank 0 shows while a job runs: a progress bar per epoch and one line per epoch.

Other ranks show nothing. With no terminal (a log file, CI, a study's log), the bar is not drawn:
an epoch that lasts longer than a minute prints a plain line once a minute instead (its step, the
loss, the time it has run and about how long is left), so a long epoch in a log file is not an
hour of silence; a shorter epoch prints only its per-epoch line.
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
        lines = self.print if self.enabled and not live else None
        with progress:
            task = progress.add_task("train", total=steps, loss="-")
            yield EpochBar(progress, task, live, lines=lines, name=f"epoch {epoch}/{max_epochs}", steps=steps)

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
    read detached from the graph (a tensor that requires grad warns when read as a number). With no
    bar to draw, ``lines`` (rank 0's print) gets a plain line every ``LINE_EVERY_S`` seconds of the
    epoch with the mean loss of the steps since the last line, summed where the loss lives and read
    then only."""

    LOSS_EVERY_S = 0.5
    LINE_EVERY_S = 60.0

    def __init__(
        self,
        progress: Progress,
        task,
        live: bool,
        clock: Callable[[], float] = time.monotonic,
        lines: Callable[[str], None] | None = None,
        name: str = "epoch",
        steps: int = 0,
    ):
        self._progress = progress
        self._task = task
        self._live = live
        self._clock = clock
        self._loss_read_at: float | None = None
        self._lines, self._name, self._steps, self._done = lines, name, steps, 0
        self._began = self._line_at = clock()
        self._loss_sum, self._losses = None, 0  # since the last line, summed where the loss is (no wait)

    def advance(self, loss=None) -> None:
        if not self._live:
            self._plain_line(loss)
            return
        now = self._clock()
        if loss is None or (self._loss_read_at is not None and now - self._loss_read_at < self.LOSS_EVERY_S):
            self._progress.advance(self._task)
            return
        self._loss_read_at = now
        self._progress.update(self._task, advance=1, loss=f"{float(loss.detach()):.4f}")

    def _plain_line(self, loss) -> None:
        """Every ``LINE_EVERY_S`` seconds: how far the epoch has come, for a log file."""
        self._done += 1
        if self._lines is None:
            return
        if loss is not None:
            self._loss_sum = loss.detach() if self._loss_sum is None else self._loss_sum + loss.detach()
            self._losses += 1
        now = self._clock()
        if now - self._line_at < self.LINE_EVERY_S:
            return
        self._line_at = now
        ran = now - self._began
        left = ran / self._done * (self._steps - self._done) if self._steps > self._done else 0.0
        said = (
            f", loss {float(self._loss_sum) / self._losses:.4f} (mean of {self._losses:,} steps)"
            if self._losses
            else ""
        )
        self._loss_sum, self._losses = None, 0
        share = f" ({100 * self._done / self._steps:.0f} %)" if self._steps else ""
        self._lines(
            f"{self._name}: step {self._done:,} of {self._steps:,}{share}{said}, {_clock_text(ran)} so far, "
            f"about {_clock_text(left)} left"
        )


def _clock_text(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
