"""One rank's run context: built once by the worker, it holds what every step of the run asks
for, so that :func:`ddpx.rank.loop.fit.fit` and the epoch loop ask it instead of being handed
each thing in turn.

It owns the job and its run folder, the registry and the recipe's components (looked up once),
where this rank stands (``env``, ``device``), its console, the checkpoint it continues from
(rank 0's choice, read on every rank), the tracker (rank 0's; ``None`` elsewhere or with
``--tracking none``), and the phase clock and the step profiler. What it trains — the task's
data and the training state, and with them the evaluation's options — is set on it as ``fit``
builds them; the training checkpoint (:mod:`ddpx.rank.checkpoints.training`) takes what
``last.pt`` holds from it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch

from ddpx.contract.job import Job
from ddpx.contract.records import FitContext, RunSummary, TaskData
from ddpx.contract.run_dir import RunDir
from ddpx.contract.specs import MetricSpec
from ddpx.plugin_host.registry import Registry
from ddpx.rank.checkpoints.resume import load_resume_state
from ddpx.rank.diagnostics.phase_clock import PhaseClock
from ddpx.rank.diagnostics.progress import RankConsole
from ddpx.rank.diagnostics.stall import BEACON
from ddpx.rank.diagnostics.step_profiler import StepProfiler
from ddpx.rank.loop.training_state import Components, TrainingState
from ddpx.rank.process_group.distributed import RankEnv, arithmetic_tags
from ddpx.records.guarded_tracker import GuardedTracker
from ddpx.records.tracking import append_metrics, log_epoch, record_result, start_job_run


@dataclass(frozen=True)
class Member:
    """The member of an ensemble a context trains (``train.ensemble_size`` above 1): its place, its
    seed, and the epochs the members before it ran (its epochs continue the run's count)."""

    index: int
    count: int
    seed: int
    epochs_before: int = 0

    def metric_name(self, key: str) -> str:
        return f"member_{self.index}/{key}"


@dataclass
class RunContext:
    job: Job
    registry: Registry
    env: RankEnv
    device: torch.device
    console: RankConsole
    parts: Components
    resume: dict[str, Any] | None = None  # the checkpoint this start continues from
    tracker: GuardedTracker | None = None  # rank 0's
    data: TaskData | None = None  # set by fit
    state: TrainingState | None = None  # set by fit
    evaluation: dict[str, Any] = field(default_factory=dict)  # evaluate()'s options on this rank; set by fit
    clock: PhaseClock = field(default_factory=lambda: PhaseClock(torch.device("cpu"), False))  # train.time_phases
    profiler: StepProfiler = field(default_factory=StepProfiler.off)  # train.profile_steps
    member: Member | None = None  # the ensemble member this context trains

    @classmethod
    def open(cls, job: Job, registry: Registry, env: RankEnv, device: torch.device, console: RankConsole) -> RunContext:
        """The context of this rank's run, inside the process group: the checkpoint to continue
        from, and on rank 0 the tracking run opened and the dev metric's modules imported."""
        run = cls(job, registry, env, device, console, Components.of(job, registry))
        BEACON.at("reading the checkpoint to continue from")
        run.resume = load_resume_state(job, run.parts.wrapper.sharded)
        BEACON.at("starting the tracking run")
        if env.is_main:
            run.tracker = run._start_tracker()
            import_metric_modules(run.parts.metric)
        return run

    def _start_tracker(self) -> GuardedTracker:
        """Open the job's tracking run (with the world size it started on: an elastic job's may be
        below its most), or continue the run of the checkpoint it resumes, and tag it with the
        arithmetic it runs on (torch, CPU kernels, threads, GPU)."""
        tracker = start_job_run(
            self.registry,
            self.job,
            self.device.type,
            lambda text: self.console.print(f"[yellow]warning:[/yellow] {text}"),
            resume_run_id=self.resume.get("tracking_run_id") if self.resume else None,
            world_size=self.env.world_size,
        )
        tracker.set_tags(arithmetic_tags(self.device))  # a resumed run: where it goes on
        return tracker

    @property
    def run_dir(self) -> RunDir:
        return self.job.run_dir

    @property
    def train(self) -> dict[str, Any]:
        """The ``train.*`` keys; an ensemble member's with its own seed."""
        train = self.job.config["train"]
        return train if self.member is None else {**train, "seed": self.member.seed}

    @property
    def best_checkpoint(self) -> Path:
        """``best.pt``: the run's, or an ensemble member's (``checkpoints/member_<i>/best.pt``)."""
        if self.member is None:
            return self.run_dir.best_checkpoint
        return self.run_dir.member_best_checkpoint(self.member.index)

    def for_member(self, member: Member, resume: dict[str, Any] | None) -> RunContext:
        """The context that trains ``member`` of this run's ensemble, continuing from ``resume``."""
        return replace(self, member=member, resume=resume, data=None, state=None, evaluation={})

    @property
    def context(self) -> FitContext:
        """What lifecycle hooks are told about this rank."""
        return self.fit_context(self.state.wrapped)

    def fit_context(self, model: torch.nn.Module) -> FitContext:
        return FitContext(
            job=self.job,
            rank=self.env.rank,
            world_size=self.env.world_size,
            local_rank=self.env.local_rank,
            device=self.device,
            model=model,
            run_dir=self.run_dir.path,
        )

    def evaluate_with(self, data: TaskData, loss_fn: Any, autocast: Any) -> None:
        """How this rank evaluates: the keyword arguments of :func:`ddpx.rank.loop.evaluation.evaluate`."""
        self.evaluation = dict(
            metric=self.parts.metric,
            loss_fn=loss_fn,
            rank=self.env.rank,
            world_size=self.env.world_size,
            device=self.device,
            batch_size=self.train["eval_batch_size"],
            collate_fn=data.collate_fn,
            autocast=autocast,
        )

    def start_training(self, data: TaskData, state: TrainingState) -> None:
        """What this rank trains, how it evaluates, and the diagnostics of its steps: the phase
        clock, and rank 0's step profiler (its trace in ``profile/``, logged to the tracker; an
        ensemble's first member's steps)."""
        self.data, self.state = data, state
        self.evaluate_with(data, state.loss_fn, state.autocast)
        self.clock = PhaseClock(self.device, self.train["time_phases"])
        self.profiler = StepProfiler(
            self.train["profile_steps"] if self.env.is_main and not (self.member and self.member.index) else 0,
            self.device,
            self.run_dir.path / "profile",
            self.console.print,
            (lambda path: self.log_artifact(path, "profile")) if self.tracker else None,
        )

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        if self.tracker:
            self.tracker.log_artifact(path, folder)

    def record_epoch(self, epoch: int, metrics: Mapping[str, float], improved: bool) -> None:
        """Rank 0: the epoch's metrics into ``metrics.jsonl``, the tracker and the terminal; an
        ensemble member's as ``member_<i>/<name>``, its epochs counted on from the members' before it."""
        console_line = partial(self.console.epoch_line, epoch, self.train["max_epochs"], metrics, improved)
        if self.member is not None:
            epoch = self.member.epochs_before + epoch
            metrics = {self.member.metric_name(key): value for key, value in metrics.items()}
        append_metrics(self.run_dir.metrics_file, {"epoch": epoch, **metrics})
        if self.tracker:
            log_epoch(self.tracker, self.job, epoch, metrics)
        console_line()

    def failed(self, exc: BaseException) -> None:
        """The run failed (or was interrupted): rank 0 closes its tracking run so."""
        if self.tracker:
            status = "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
            self.tracker.finish(status, error=f"{type(exc).__name__}: {exc}")

    def record_result(self, summary: RunSummary) -> None:
        """Rank 0: the result into the tracker (which it closes) and ``summary.json``."""
        summary.run_id = self.tracker.run_id if self.tracker else None
        summary.tracker_hint = self.tracker.describe() if self.tracker else None
        if self.tracker:
            record_result(self.tracker, self.job, self.parts.task, summary)
            summary.tracking_error = self.tracker.error
        summary.write(self.run_dir.summary_file)


def import_metric_modules(metric: MetricSpec) -> None:
    """Rank 0 computes the dev metric after every epoch: it imports what the metric needs as the
    run starts, not between the first and second epochs while the other ranks wait for it."""
    for module in metric.imports:
        importlib.import_module(module)
