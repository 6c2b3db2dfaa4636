"""What one rank trains with: the recipe's components looked up once, the model built and
wrapped, the optimizer, schedule and gradient scaler, the sampler — and where training stands
(model selection, position), restored from a checkpoint when the run continues.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from ddpx.contract.errors import UserError
from ddpx.contract.job import Job
from ddpx.contract.records import TaskData
from ddpx.contract.specs import (
    MetricSpec,
    ModelSpec,
    OptimizerSpec,
    SamplerSpec,
    ScheduleSpec,
    TaskSpec,
    WrapperSpec,
)
from ddpx.plugin_host.registry import Registry
from ddpx.rank.checkpoints.rank_state import restore_rng_state
from ddpx.rank.checkpoints.sharded import load_shards
from ddpx.rank.loop.accumulation import optimizer_steps
from ddpx.rank.loop.batching import training_batches
from ddpx.rank.loop.encoder import start_encoder
from ddpx.rank.loop.losses import LossFn, loss_function
from ddpx.rank.loop.optim import autocast_factory, build_optimizer, build_schedule
from ddpx.rank.process_group.distributed import RankEnv
from ddpx.records.checkpoint_file import load_model_weights, strip_wrapper_prefixes

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.rank.run_context import RunContext


@dataclass(frozen=True)
class Components:
    """The registered components a recipe names."""

    task: TaskSpec
    model: ModelSpec
    metric: MetricSpec
    sampler: SamplerSpec
    wrapper: WrapperSpec
    optimizer: OptimizerSpec
    schedule: ScheduleSpec

    @classmethod
    def of(cls, job: Job, registry: Registry) -> Components:
        train = job.config["train"]
        task = registry.task_of(job.config)
        return cls(
            task=task,
            model=registry.get("models", job.config["model"]["name"]),
            metric=registry.get("metrics", task.metric),
            sampler=registry.get("samplers", train["sampler"]),
            wrapper=registry.get("wrappers", train["wrapper"]),
            optimizer=registry.get("optimizers", train["optimizer"], key="train.optimizer"),
            schedule=registry.get("schedules", train["lr_schedule"], key="train.lr_schedule"),
        )


@dataclass
class Selection:
    """Model selection so far: the best dev result, its epoch and weights, epochs without gain."""

    best: tuple[float, float] | None = None  # (dev metric, dev loss)
    best_epoch: int = 0
    stale: int = 0
    best_state: dict[str, torch.Tensor] = field(default_factory=dict)


@dataclass
class Position:
    """Where training stands: epochs completed, and steps done in the next one."""

    epoch: int = 0
    step: int = 0
    totals: list[float] = field(default_factory=lambda: [0.0, 0.0])  # this rank's loss sum and sample count


@dataclass
class TrainingState:
    """The model in its three forms (plain, wrapped, compiled for the step) and what updates it."""

    model: torch.nn.Module
    wrapped: torch.nn.Module
    step_model: torch.nn.Module
    sampler: Any
    batches_per_epoch: int  # micro-batches
    batch_size: int  # samples per micro-batch
    accumulate: int  # micro-batches per optimizer step
    optimizer: torch.optim.Optimizer
    scheduler: Any
    scaler: torch.amp.GradScaler
    loss_fn: LossFn
    autocast: Callable[[], Any]
    selection: Selection
    position: Position = field(default_factory=Position)
    global_step: int = 0  # optimizer steps over the run
    sharded: bool = False  # each rank holds a shard of the parameters (checkpoints through DCP)
    pruned_after: int | None = None  # the epoch after which a search's pruner stopped this trial
    epoch_order: list[int] | None = None  # this rank's indices for the rest of an epoch continued elsewhere

    @property
    def optimizer_steps_per_epoch(self) -> int:
        return optimizer_steps(self.batches_per_epoch, self.accumulate)


def clone_state(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in state.items()}


def build_model(
    job: Job, parts: Components, data: TaskData, device: torch.device, resume: dict[str, Any] | None
) -> torch.nn.Module:
    """The plain model on ``device``: fresh, or with the checkpoint's or ``train.init_from``'s weights."""
    train = job.config["train"]
    model = parts.model.build({k: v for k, v in job.config["model"].items() if k != "name"}, data.info)
    if resume is not None and "model" in resume:  # a sharded checkpoint loads after wrapping
        model.load_state_dict(strip_wrapper_prefixes(resume["model"]))
    elif train["init_from"]:
        load_model_weights(model, train["init_from"])
    model.to(device)
    if train["channels_last"]:
        model.to(memory_format=torch.channels_last)
    return model


def count_batches(data: TaskData, sampler: Any, train: dict[str, Any], device: torch.device) -> int:
    """This rank's training batches per epoch; a rank with none is a clear error."""
    count = len(
        training_batches(
            data.train,
            sampler,
            batch_size=train["batch_size"],
            device=device,
            num_workers=0,
            collate_fn=data.collate_fn,
            drop_last=train["drop_last"],
        )
    )
    if count == 0:
        raise UserError(
            f"this rank gets no training batch: {len(sampler)} samples per rank with train.batch_size="
            f"{train['batch_size']} and train.drop_last=true. Lower the batch size or use fewer ranks."
        )
    return count


def build_training_state(run: RunContext, data: TaskData) -> TrainingState:
    """Everything this rank trains with, in the order that fixes every random draw."""
    train, parts, env, device = run.train, run.parts, run.env, run.device
    model = build_model(run.job, parts, data, device, run.resume)
    start_encoder(run, model)  # pretrained weights, before the wrapper copies rank 0's to every rank
    wrapped = parts.wrapper.wrap(model, device)
    step_model = torch.compile(wrapped) if train["compile"] else wrapped
    torch.manual_seed(train["seed"] + 1 + env.rank)  # ranks draw different dropout masks from here on
    sampler = parts.sampler.build(data.train, rank=env.rank, world_size=env.world_size, seed=train["seed"])
    batches = count_batches(data, sampler, train, device)
    optimizer = build_optimizer(parts.optimizer, wrapped.parameters(), train)
    return TrainingState(
        model=model,
        wrapped=wrapped,
        step_model=step_model,
        sampler=sampler,
        batches_per_epoch=batches,
        batch_size=train["batch_size"],
        accumulate=train["accumulate"],
        optimizer=optimizer,
        scheduler=build_schedule(parts.schedule, optimizer, train, optimizer_steps(batches, train["accumulate"])),
        scaler=torch.amp.GradScaler(device.type, enabled=train["precision"] == "fp16"),
        loss_fn=loss_function(parts.task.loss),
        autocast=autocast_factory(device, train["precision"]),
        selection=Selection(best_state=clone_state(model.state_dict())),
        sharded=parts.wrapper.sharded,
    )


def restore(state: TrainingState, resume: dict[str, Any], env: RankEnv) -> str:
    """Continue from a checkpoint: optimizer, schedule, scaler, selection, position and this rank's
    RNG state (when the world size is the one that wrote it). Returns a line for the user."""
    if resume.get("sharded"):
        best_state = load_shards(Path(resume["source"]).parent / resume["sharded"], state.model, state.optimizer)
    else:
        state.optimizer.load_state_dict(resume["optimizer"])
        best_state = strip_wrapper_prefixes(resume["best_model"])
    if state.scheduler is not None and resume.get("scheduler"):
        state.scheduler.load_state_dict(resume["scheduler"])
    if resume.get("scaler"):
        state.scaler.load_state_dict(resume["scaler"])
    best = resume.get("best")
    state.selection = Selection(
        best=tuple(best) if best else None,
        best_epoch=resume.get("best_epoch", 0),
        stale=resume.get("stale", 0),
        best_state=best_state,
    )
    ranks = resume["ranks"]
    same_world = len(ranks) == env.world_size
    position = state.position = Position(
        epoch=resume["epoch"],
        step=resume.get("step", 0),
        totals=ranks[env.rank]["totals"] if same_world else [0.0, 0.0],
    )
    state.global_step = resume.get(
        "global_step",
        position.epoch * state.optimizer_steps_per_epoch + optimizer_steps(position.step, state.accumulate),
    )
    if same_world:
        restore_rng_state(ranks[env.rank]["rng"])
    into = f", {position.step} step(s) into epoch {position.epoch + 1}" if position.step else ""
    return f"resuming from {resume['source']}: {position.epoch} epoch(s) done{into}"
