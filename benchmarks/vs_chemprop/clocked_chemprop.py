"""Chemprop's own command line with a clock: ``chemprop train`` (``chemprop.cli.main.main``, what
the ``chemprop`` command runs) with a Lightning callback that notes each epoch's training and whole
seconds and where its training steps go (``PHASES``), traces optimizer steps as ddpx's
``train.profile_steps`` does, and under ``--lockstep`` takes its turns (``lockstep.py``).

    python benchmarks/vs_chemprop/clocked_chemprop.py RECORD PROFILE_STEPS train --data-path ...

``run.py`` starts every Chemprop run so (``launches.py``); RECORD receives the epochs as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.vs_chemprop.lockstep import Turns, turns_from_env

PHASES = ("batch_s", "forward_s", "backward_s", "optimizer_s")


def epoch_clock(pl, record: Path, profiler, turns: Turns | None):
    """A Lightning callback noting each epoch's times and phases in ``record`` (JSON), stepping
    ``profiler``, and taking ``turns`` (under ``--lockstep``)."""

    class EpochClock(pl.Callback):
        rows: ClassVar[list] = []

        def on_train_epoch_start(self, trainer, module):
            self.start, self.validation = time.perf_counter(), None
            self.mark, self.phases = self.start, dict.fromkeys(PHASES, 0.0)

        def _until_now(self, phase: str) -> None:
            now = time.perf_counter()
            self.phases[phase] += now - self.mark
            self.mark = now

        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            self._until_now("batch_s")

        def on_before_backward(self, trainer, module, loss):
            self._until_now("forward_s")

        def on_after_backward(self, trainer, module):
            self._until_now("backward_s")

        def on_before_optimizer_step(self, trainer, module, optimizer):
            self.mark = time.perf_counter()  # Lightning's own steps between backward and the update: neither

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            self._until_now("optimizer_s")
            profiler.step()

        def on_validation_start(self, trainer, module):
            if not trainer.sanity_checking:
                self.validation = time.perf_counter()
                profiler.epoch_ended()

        def on_train_start(self, trainer, module):
            if turns:
                turns.start()

        def on_fit_end(self, trainer, module):
            profiler.close()
            if turns:
                turns.finish()

        def on_train_epoch_end(self, trainer, module):
            end = time.perf_counter()
            self.rows.append(
                {"train_s": (self.validation or end) - self.start, "epoch_s": end - self.start, **self.phases}
            )
            record.write_text(json.dumps(self.rows), encoding="utf-8")
            if turns:
                turns.give()

    return EpochClock()


def clocked_chemprop(record: Path, argv: list[str], profile_steps: int = 0) -> None:
    """Chemprop's command line with a callback noting each epoch's times in ``record`` (JSON) and,
    with ``profile_steps``, tracing that many optimizer steps as ``train.profile_steps`` does in
    ddpx (the table lands beside ``record``, as ``<record stem>-profile/ops.txt``)."""
    import lightning.pytorch as pl
    import torch

    from ddpx.rank.diagnostics.step_profiler import StepProfiler

    profiler = StepProfiler(
        profile_steps,
        torch.device("cpu"),
        record.parent / f"{record.stem}-profile",
        lambda line: print(line, file=sys.stderr),
    )
    turns = turns_from_env()  # --lockstep
    clock, base = epoch_clock(pl, record, profiler, turns), pl.Trainer

    class ClockedTrainer(base):
        def __init__(self, *args, callbacks=None, **kwargs):
            super().__init__(*args, callbacks=[*(callbacks or []), clock], **kwargs)

    pl.Trainer = ClockedTrainer  # chemprop.cli.train calls pl.Trainer(...)
    sys.argv = ["chemprop", *argv]
    from chemprop.cli.main import main

    main()


if __name__ == "__main__":
    clocked_chemprop(Path(sys.argv[1]), sys.argv[3:], int(sys.argv[2]))
