"""``fit``: one rank's whole run, in four steps — build (data, model, training state), restore
(when the run continues), the epoch loop (:mod:`ddpx.rank.epochs`), and the final held-out
evaluation of the best weights with its reports and the exported model.

Every rank runs the same steps on identical splits; the model wrapper (``train.wrapper``, DDP by
default) starts every rank from rank 0's weights and keeps them equal. Every epoch rank 0 writes
``last.pt`` with everything needed to continue exactly, and ``best.pt`` when the epoch is the
best so far; a stop request (SIGUSR1) writes ``last.pt`` at a step boundary inside the epoch, and
a run started again continues from it (see :mod:`ddpx.rank.resume`).
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import torch

from ddpx.contract.errors import UserError
from ddpx.contract.job import Job
from ddpx.contract.records import DataRequest, RunSummary, TaskData
from ddpx.plugin_host.registry import Registry
from ddpx.rank.distributed import RankEnv, barrier, broadcast_object
from ddpx.rank.epochs import run_epochs
from ddpx.rank.evaluation import evaluate, per_label_metrics
from ddpx.rank.optim import build_schedule, seed_everything
from ddpx.rank.phase_clock import PhaseClock
from ddpx.rank.progress import RankConsole
from ddpx.rank.rank_run import RankRun
from ddpx.rank.sharded_checkpoint import gathered
from ddpx.rank.stall import BEACON
from ddpx.rank.step_profiler import StepProfiler
from ddpx.rank.training_state import Components, TrainingState, build_training_state, restore
from ddpx.rank.world_change import continue_here
from ddpx.records.dataset_record import dataset_record
from ddpx.records.guarded_tracker import GuardedTracker
from ddpx.records.model_export import write_model_files
from ddpx.records.reports import heldout_reports


def fit(
    job: Job,
    registry: Registry,
    env: RankEnv,
    device: torch.device,
    console: RankConsole,
    tracker: GuardedTracker | None,
    resume: dict[str, Any] | None = None,
) -> RunSummary:
    """Train and evaluate one run on this rank; returns the same summary on every rank."""
    started = time.perf_counter()
    parts = Components.of(job, registry)
    seed_everything(job.config["train"]["seed"])
    BEACON.at(f"building the data of task {parts.task.name}")
    data = build_task_data(job, parts, env, device, console)
    if tracker:
        tracker.log_dataset(dataset_record(parts.task.name, data, job.config["dataset"], job.config["train"]["seed"]))
    BEACON.at("building the model, its wrapper and the optimizer")
    state = build_training_state(job, registry, parts, data, env, device, resume)
    if resume is not None:
        for line in resume_training(job, registry, parts, data, env, state, resume):
            console.print(line)
    run = RankRun(
        job,
        registry,
        env,
        device,
        console,
        tracker,
        parts,
        data,
        state,
        PhaseClock(device, job.config["train"]["time_phases"]),
        StepProfiler(
            job.config["train"]["profile_steps"] if env.is_main else 0,
            device,
            job.run_dir.path / "profile",
            console.print,
            (lambda path: tracker.log_artifact(path, "profile")) if tracker else None,
        ),
    )
    BEACON.at("the plugins' ddpx_fit_start hooks")
    registry.pm.hook.ddpx_fit_start(context=run.context)
    try:
        run_epochs(run)
    except BaseException:
        run.profiler.abandon()
        raise
    run.profiler.close()
    BEACON.at("the held-out evaluation, its reports and the exported model")
    summary = evaluate_heldout(run, started)
    BEACON.at("the plugins' ddpx_fit_end hooks")
    registry.pm.hook.ddpx_fit_end(context=run.context, result=summary)
    return summary


def resume_training(
    job: Job,
    registry: Registry,
    parts: Components,
    data: TaskData,
    env: RankEnv,
    state: TrainingState,
    resume: dict[str, Any],
) -> list[str]:
    """Restore the checkpoint's state, fitted to this job's ranks and steps; lines for the user."""
    train = job.config["train"]
    lines = [restore(state, resume, env)]
    changed = continue_here(
        state,
        resume,
        env.rank,
        env.world_size,
        partial(parts.sampler.build, data.train, seed=train["seed"]),
        train,
        partial(build_schedule, registry, state.optimizer, train, state.optimizer_steps_per_epoch),
    )
    return lines + ([changed] if changed else [])


def build_task_data(job: Job, parts: Components, env: RankEnv, device: torch.device, console: RankConsole) -> TaskData:
    """The task's splits, identical on every rank; every rank needs a training sample."""
    request = DataRequest(
        params=job.config["dataset"],
        seed=job.config["train"]["seed"],
        rank=env.rank,
        world_size=env.world_size,
        local_rank=env.local_rank,
        barrier=barrier,
        log=lambda text: console.print(f"data: {text}"),
        device=device,
        inputs=parts.task.input_for(parts.model),
    )
    data = parts.task.build_data(request)
    if len(data.train) < env.world_size:
        raise UserError(
            f"the training split has {len(data.train)} samples but the job has {env.world_size} ranks; every rank "
            "needs at least one. Use fewer ranks (--nproc) or more data."
        )
    return data


def evaluate_heldout(run: RankRun, started: float) -> RunSummary:
    """The best weights on the held-out split, exactly; rank 0 writes the reports and the model."""
    selection, metric = run.state.selection, run.parts.metric
    run.state.model.load_state_dict(selection.best_state)
    heldout = evaluate(run.state.model, run.data.heldout, keep_predictions=True, **run.evaluation_options())
    best_weights = gathered(selection.best_state)  # whole tensors of a sharded model, on every rank
    if run.env.is_main:
        folder = run.job.run_dir.path
        for path in heldout_reports(heldout.predictions, run.parts.task.loss, run.data.info, folder / "reports"):
            if run.tracker:
                run.tracker.log_artifact(path)
        for path in write_model_files(folder / "model", best_weights, run.job.config, run.data.info):
            if run.tracker:
                run.tracker.log_artifact(path, "model")
    by_label = per_label_metrics(heldout.predictions, metric, run.data.info.get("labels") or [], "heldout")
    return RunSummary(
        heldout=heldout.as_metrics("heldout", metric.name),
        by_label=broadcast_object(by_label),
        metric=metric.name,
        greater_is_better=metric.greater_is_better,
        best_dev=selection.best[0] if selection.best else None,
        best_epoch=selection.best_epoch,
        epochs_run=run.state.position.epoch,
        wall_seconds=time.perf_counter() - started,
        heldout_samples=heldout.count,
        pruned_after=run.state.pruned_after,
        selected_by=run.train["select_by"],
        best_dev_loss=selection.best[1] if selection.best else None,
    )
