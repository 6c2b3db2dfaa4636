"""One rank's run, bundled: the job and registry, where this rank stands in the world, what it
prints and tracks, the recipe's components, its data and its training state. The steps of
:func:`ddpx.rank.fit.fit` each take this one record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ddpx.contract.job import Job
from ddpx.contract.records import FitContext, TaskData
from ddpx.plugin_host.registry import Registry
from ddpx.rank.distributed import RankEnv
from ddpx.rank.phase_clock import PhaseClock
from ddpx.rank.progress import RankConsole
from ddpx.rank.step_profiler import StepProfiler
from ddpx.rank.training_state import Components, TrainingState
from ddpx.records.guarded_tracker import GuardedTracker


@dataclass
class RankRun:
    job: Job
    registry: Registry
    env: RankEnv
    device: torch.device
    console: RankConsole
    tracker: GuardedTracker | None
    parts: Components
    data: TaskData
    state: TrainingState
    clock: PhaseClock = field(default_factory=lambda: PhaseClock(torch.device("cpu"), False))  # train.time_phases
    profiler: StepProfiler = field(default_factory=StepProfiler.off)  # train.profile_steps

    @property
    def train(self) -> dict[str, Any]:
        return self.job.config["train"]

    @property
    def context(self) -> FitContext:
        """What lifecycle hooks are told about this rank."""
        return FitContext(
            job=self.job,
            rank=self.env.rank,
            world_size=self.env.world_size,
            local_rank=self.env.local_rank,
            device=self.device,
            model=self.state.wrapped,
            run_dir=self.job.run_dir.path,
        )

    def evaluation_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`ddpx.rank.evaluation.evaluate` for this rank."""
        return dict(
            metric=self.parts.metric,
            loss_fn=self.state.loss_fn,
            rank=self.env.rank,
            world_size=self.env.world_size,
            device=self.device,
            batch_size=self.train["eval_batch_size"],
            collate_fn=self.data.collate_fn,
            autocast=self.state.autocast,
        )
