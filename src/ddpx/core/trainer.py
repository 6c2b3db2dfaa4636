"""The training loop every rank runs: build, wrap in DDP, train, select, evaluate held-out.

Per rank: seed; build the task's splits (identical everywhere); build the model and wrap it with
``train.wrapper`` (DDP by default, which broadcasts rank 0's parameters, so every rank starts
equal; ``train.check_sync`` verifies after every step that they stay equal);
each epoch ``set_epoch`` the sampler, train on this rank's share, evaluate dev exactly, keep the
best weights on the dev metric and stop early after ``train.patience`` epochs without
improvement; finally evaluate the held-out split with the best weights.

Every epoch rank 0 writes ``last.pt`` with everything needed to continue exactly — every rank's
RNG state included — and ``best.pt`` when the epoch is the best so far. A stop request (SIGUSR1)
writes ``last.pt`` at a step boundary inside the epoch; a run started again continues from it
(see :mod:`ddpx.core.resume`).
"""

from __future__ import annotations

import math
import random
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
import torch.distributed as dist

from ddpx.core.batching import training_batches
from ddpx.core.checkpoint import load_model_weights, restore_rng_state, rng_state, save_checkpoint, strip_wrapper_prefixes, unwrap
from ddpx.core.components import DataRequest, FitContext, FitResult, MetricSpec
from ddpx.core.dataset_record import dataset_record
from ddpx.core.distributed import RankEnv, all_reduce_sum, barrier
from ddpx.core.sync_check import check_parameters_in_sync
from ddpx.core.errors import UserError
from ddpx.core.evaluation import evaluate
from ddpx.core.job import Job
from ddpx.core.losses import loss_function
from ddpx.core.model_export import write_model_files
from ddpx.core.progress import RankConsole
from ddpx.core.registry import Registry
from ddpx.core.reports import heldout_reports
from ddpx.core.signals import Preempted, StopRequests
from ddpx.core.tracking import GuardedTracker, append_metrics
from ddpx.core.transfer import to_device


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def build_optimizer(parameters, train: dict[str, Any]) -> torch.optim.Optimizer:
    name = train["optimizer"]
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=train["lr"], momentum=train["momentum"], weight_decay=train["weight_decay"])
    if name == "adam":
        return torch.optim.Adam(parameters, lr=train["lr"], weight_decay=train["weight_decay"])
    return torch.optim.AdamW(parameters, lr=train["lr"], weight_decay=train["weight_decay"])


def autocast_factory(device: torch.device, precision: str) -> Callable[[], Any]:
    """A context-manager factory for the forward pass in the recipe's precision."""
    if precision in ("fp32", "32"):
        return nullcontext
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return lambda: torch.autocast(device_type=device.type, dtype=dtype)


def build_scheduler(optimizer: torch.optim.Optimizer, train: dict[str, Any], steps_per_epoch: int):
    """A per-step learning-rate schedule over the whole run, or ``None``."""
    total = max(1, train["max_epochs"] * steps_per_epoch)
    if train["lr_schedule"] == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total)
    if train["lr_schedule"] == "onecycle":
        return torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=train["lr"], total_steps=total)
    return None


def _channels_last(inputs: Any) -> Any:
    if isinstance(inputs, torch.Tensor) and inputs.dim() == 4:
        return inputs.contiguous(memory_format=torch.channels_last)
    return inputs


def _is_better(value: float, loss: float, best: tuple[float, float] | None, metric: MetricSpec) -> bool:
    """Better dev metric wins; on a tie (a saturated accuracy, say) the lower dev loss wins."""
    if math.isnan(value):
        return False
    if best is None:
        return True
    best_value, best_loss = best
    if value == best_value:
        return loss < best_loss
    return value > best_value if metric.greater_is_better else value < best_value


def _clone(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in state.items()}


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


def _gather_rank_states(totals: torch.Tensor) -> list[dict[str, Any]]:
    """Every rank's RNG state and partial-epoch sums, in rank order (for exact resumption)."""
    mine = {"rng": rng_state(), "totals": totals.tolist()}
    if not dist.is_initialized():
        return [mine]
    states: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(states, mine)
    return states


def fit(job: Job, registry: Registry, env: RankEnv, device: torch.device, console: RankConsole,
        tracker: GuardedTracker | None, resume: dict[str, Any] | None = None) -> FitResult:
    """Train and evaluate one run on this rank; returns the same result on every rank."""
    started = time.perf_counter()
    cfg = job.config
    train = cfg["train"]
    task = registry.get("tasks", cfg["task"])
    model_spec = registry.get("models", cfg["model"]["name"])
    metric: MetricSpec = registry.get("metrics", task.metric)
    sampler_spec = registry.get("samplers", train["sampler"])
    paths = job.paths

    seed_everything(train["seed"])
    data = task.build_data(
        DataRequest(params=cfg["dataset"], seed=train["seed"], rank=env.rank, world_size=env.world_size,
                    local_rank=env.local_rank, barrier=barrier, log=lambda text: console.print(f"data: {text}"),
                    device=device)
    )
    if len(data.train) < env.world_size:
        raise UserError(
            f"the training split has {len(data.train)} samples but the job has {env.world_size} ranks; every rank "
            "needs at least one. Use fewer ranks (--nproc) or more data."
        )
    if tracker:
        tracker.log_dataset(dataset_record(task.name, data, cfg["dataset"], train["seed"]))

    model = model_spec.build({k: v for k, v in cfg["model"].items() if k != "name"}, data.info)
    if resume is not None:
        model.load_state_dict(strip_wrapper_prefixes(resume["model"]))
    elif train["init_from"]:
        load_model_weights(model, train["init_from"])
    model.to(device)
    if train["channels_last"]:
        model.to(memory_format=torch.channels_last)
    ddp_model = registry.get("wrappers", train["wrapper"]).wrap(model, device)
    step_model = torch.compile(ddp_model) if train["compile"] else ddp_model
    torch.manual_seed(train["seed"] + 1 + env.rank)  # ranks draw different dropout masks from here on

    sampler = sampler_spec.build(data.train, rank=env.rank, world_size=env.world_size, seed=train["seed"])
    batches_per_epoch = len(training_batches(data.train, sampler, batch_size=train["batch_size"], device=device,
                                             num_workers=0, collate_fn=data.collate_fn, drop_last=train["drop_last"]))
    if batches_per_epoch == 0:
        raise UserError(
            f"this rank gets no training batch: {len(sampler)} samples per rank with train.batch_size="
            f"{train['batch_size']} and train.drop_last=true. Lower the batch size or use fewer ranks."
        )
    optimizer = build_optimizer(ddp_model.parameters(), train)
    scheduler = build_scheduler(optimizer, train, batches_per_epoch)
    loss_fn = loss_function(task.loss)
    autocast = autocast_factory(device, train["precision"])
    scaler = torch.amp.GradScaler(device.type, enabled=train["precision"] == "fp16")
    eval_kwargs = dict(metric=metric, loss_fn=loss_fn, rank=env.rank, world_size=env.world_size, device=device,
                       batch_size=train["eval_batch_size"], collate_fn=data.collate_fn, autocast=autocast)

    selection = Selection(best_state=_clone(model.state_dict()))
    position = Position()
    if resume is not None:
        optimizer.load_state_dict(resume["optimizer"])
        if scheduler is not None and resume.get("scheduler"):
            scheduler.load_state_dict(resume["scheduler"])
        if resume.get("scaler"):
            scaler.load_state_dict(resume["scaler"])
        best = resume.get("best")
        selection = Selection(best=tuple(best) if best else None, best_epoch=resume.get("best_epoch", 0),
                              stale=resume.get("stale", 0), best_state=strip_wrapper_prefixes(resume["best_model"]))
        ranks = resume["ranks"]
        position = Position(epoch=resume["epoch"], step=resume.get("step", 0),
                            totals=ranks[env.rank]["totals"] if len(ranks) == env.world_size else [0.0, 0.0])
        if len(ranks) == env.world_size:
            restore_rng_state(ranks[env.rank]["rng"])
        console.print(f"resuming from {resume['source']}: {position.epoch} epoch(s) done"
                      + (f", {position.step} step(s) into epoch {position.epoch + 1}" if position.step else ""))

    def write_last(improved: bool, totals: torch.Tensor) -> None:
        rank_states = _gather_rank_states(totals)
        if not env.is_main:
            return
        state = {
            "model": unwrap(model).state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict() if scheduler is not None else None,
            "scaler": scaler.state_dict() if scaler.is_enabled() else None,
            "epoch": position.epoch,
            "step": position.step,
            "best": list(selection.best) if selection.best else None,
            "best_epoch": selection.best_epoch,
            "best_metric": selection.best[0] if selection.best else None,
            "stale": selection.stale,
            "best_model": selection.best_state,
            "ranks": rank_states,
            "rng": rank_states[0]["rng"],
            "tracking_run_id": tracker.run_id if tracker else None,
            "recipe": job.config,
            "task_info": data.info,  # what rebuilding the model needs (a vocabulary, say)
        }
        save_checkpoint(paths.last_checkpoint, state)
        if improved:
            save_checkpoint(paths.best_checkpoint, state)

    context = FitContext(job=job, rank=env.rank, world_size=env.world_size, local_rank=env.local_rank,
                         device=device, model=ddp_model, run_dir=paths.root)
    registry.pm.hook.ddpx_fit_start(context=context)
    stops = StopRequests(every=train["stop_check_every"])

    max_epochs = train["max_epochs"]
    try:
        while position.epoch < max_epochs and not (train["patience"] and selection.stale >= train["patience"]):
            epoch = position.epoch + 1
            if hasattr(sampler, "set_epoch"):
                sampler.set_epoch(epoch)
            loader = training_batches(data.train, sampler, batch_size=train["batch_size"], device=device,
                                      num_workers=train["num_workers"], collate_fn=data.collate_fn,
                                      drop_last=train["drop_last"], skip_batches=position.step)
            epoch_start = time.perf_counter()
            totals = torch.tensor(position.totals, dtype=torch.float64, device=device)
            with console.epoch_bar(epoch, max_epochs, batches_per_epoch) as bar:
                for inputs, targets in loader:
                    inputs, targets = to_device(inputs, device), to_device(targets, device)
                    if train["channels_last"]:
                        inputs = _channels_last(inputs)
                    optimizer.zero_grad(set_to_none=True)
                    with autocast():
                        loss = loss_fn(step_model(inputs), targets)
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                    if scheduler is not None:
                        scheduler.step()
                    if train["check_sync"]:
                        check_parameters_in_sync(model, f"step {position.step + 1} of epoch {epoch}")
                    totals[0] += loss.detach().double() * targets.shape[0]
                    totals[1] += targets.shape[0]
                    position.step += 1
                    bar.advance(loss)
                    if position.step < batches_per_epoch and stops.agreed(position.step, device):
                        write_last(False, totals)
                        registry.pm.hook.ddpx_preempted(context=context)
                        raise Preempted(f"stopped on request {position.step} step(s) into epoch {epoch}; "
                                        f"the checkpoint is {paths.last_checkpoint}")
            if device.type == "cuda":
                torch.cuda.synchronize(device)  # the epoch's queued kernels belong to its time
            train_seconds = time.perf_counter() - epoch_start
            summed = all_reduce_sum(totals)
            dev = evaluate(model, data.dev, **eval_kwargs)
            improved = _is_better(dev.metric, dev.loss, selection.best, metric)
            if improved:
                selection.best, selection.best_epoch, selection.stale = (dev.metric, dev.loss), epoch, 0
                selection.best_state = _clone(model.state_dict())
            else:
                selection.stale += 1
            metrics = {
                "train_loss": float(summed[0] / summed[1]),
                **dev.as_metrics("dev", metric.name),
                "lr": optimizer.param_groups[0]["lr"],
                "samples_per_s": float(summed[1]) / train_seconds,
                "epoch_s": time.perf_counter() - epoch_start,
            }
            position = Position(epoch=epoch)
            write_last(improved, torch.zeros(2, dtype=torch.float64))
            if env.is_main:
                append_metrics(paths.metrics_file, {"epoch": epoch, **metrics})
                if tracker:
                    tracker.log_metrics(metrics, step=epoch)
                console.epoch_line(epoch, max_epochs, metrics, improved)
            registry.pm.hook.ddpx_epoch_end(context=context, epoch=epoch, metrics=metrics)
            if stops.agreed(0, device, force=True) and position.epoch < max_epochs:
                registry.pm.hook.ddpx_preempted(context=context)
                raise Preempted(f"stopped on request after epoch {epoch}; the checkpoint is {paths.last_checkpoint}")
    finally:
        stops.restore()
    if train["patience"] and selection.stale >= train["patience"] and position.epoch < max_epochs:
        console.print(f"early stop: no dev improvement for {selection.stale} epochs; best epoch {selection.best_epoch}")

    model.load_state_dict(selection.best_state)
    heldout = evaluate(model, data.heldout, keep_predictions=True, **eval_kwargs)
    if env.is_main:
        for path in heldout_reports(heldout.predictions, task.loss, data.info, paths.root / "reports"):
            if tracker:
                tracker.log_artifact(path)
        for path in write_model_files(paths.root / "model", selection.best_state, cfg, data.info):
            if tracker:
                tracker.log_artifact(path, "model")
    result = FitResult(
        heldout=heldout.as_metrics("heldout", metric.name),
        best_epoch=selection.best_epoch,
        epochs_run=position.epoch,
        wall_seconds=time.perf_counter() - started,
        heldout_samples=heldout.count,
        extra={"metric": metric.name, "greater_is_better": metric.greater_is_better,
               f"best_dev_{metric.name}": selection.best[0] if selection.best else None},
    )
    registry.pm.hook.ddpx_fit_end(context=context, result=result)
    return result
