"""The epoch loop: train this rank's share, evaluate dev exactly, keep the best weights, stop
early after ``train.patience`` epochs without improvement, checkpoint every epoch, and stop at a
step boundary on every rank alike when a stop is requested (SIGUSR1).
"""

from __future__ import annotations

import math
import time
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import torch

from ddpx.contract.specs import MetricSpec
from ddpx.rank.checkpoints.training import write_last
from ddpx.rank.diagnostics.stall import BEACON
from ddpx.rank.diagnostics.sync_check import check_parameters_in_sync
from ddpx.rank.loop.accumulation import MicroBatch, without_gradient_sync
from ddpx.rank.loop.batching import training_batches
from ddpx.rank.loop.encoder import drop_frozen_gradients
from ddpx.rank.loop.evaluation import evaluate
from ddpx.rank.loop.pruning import TrialPruning
from ddpx.rank.loop.training_state import Position, TrainingState, clone_state
from ddpx.rank.loop.transfer import to_device
from ddpx.rank.loop.world_change import EpochOrder
from ddpx.rank.process_group.distributed import all_reduce_sum
from ddpx.rank.process_group.signals import Preempted, StopRequests, termination_after_records

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.rank.run_context import RunContext


def is_better(
    value: float, loss: float, best: tuple[float, float] | None, metric: MetricSpec, by: str = "metric"
) -> bool:
    """Is this epoch's dev result (metric, loss) better than the best so far?

    ``by="metric"`` (``train.select_by``'s default): the better dev metric wins, and on a tie (a
    saturated accuracy, say) the lower dev loss. ``by="loss"``: the lower dev loss wins, and on a tie
    the better metric (the rule of Chemprop's default and of Lightning's ``val_loss`` checkpoints)."""
    if math.isnan(loss if by == "loss" else value):
        return False
    if best is None:
        return True
    best_value, best_loss = best
    metric_better = value > best_value if metric.greater_is_better else value < best_value
    if by == "loss":
        return loss < best_loss or (loss == best_loss and metric_better)
    return loss < best_loss if value == best_value else metric_better


def _channels_last(inputs):
    if isinstance(inputs, torch.Tensor) and inputs.dim() == 4:
        return inputs.contiguous(memory_format=torch.channels_last)
    return inputs


def stopping_early(run: RunContext) -> bool:
    return bool(run.train["patience"]) and run.state.selection.stale >= run.train["patience"]


def run_epochs(run: RunContext) -> None:
    """Train until ``train.max_epochs``, early stopping, or a stop request (raises :class:`Preempted`)."""
    stops = StopRequests(every=run.train["stop_check_every"])
    max_epochs = run.train["max_epochs"]
    pruning = TrialPruning(run.job.search, run.env.is_main) if run.job.search and run.member is None else None
    try:
        while run.state.position.epoch < max_epochs and not stopping_early(run):
            epoch = run.state.position.epoch + 1
            started = time.perf_counter()
            totals = train_epoch(run, epoch, stops)
            dev_value = finish_epoch(run, epoch, totals, started)
            if pruning is not None and epoch < max_epochs and pruning.should_stop(epoch, dev_value):
                run.state.pruned_after = epoch
                run.console.print(
                    f"pruned by the search after epoch {epoch}: its dev metric is behind the other trials'"
                )
                break
            if stops.agreed(0, run.device, force=True) and epoch < max_epochs:
                run.registry.pm.hook.ddpx_preempted(context=run.context)
                raise Preempted(
                    f"stopped on request after epoch {epoch}; the checkpoint is {run.run_dir.last_checkpoint}"
                )
    finally:
        stops.restore()
    selection = run.state.selection
    if stopping_early(run) and run.state.position.epoch < max_epochs:
        run.console.print(
            f"early stop: no dev improvement for {selection.stale} epochs; best epoch {selection.best_epoch}"
        )


def train_epoch(run: RunContext, epoch: int, stops: StopRequests) -> torch.Tensor:
    """One epoch (or its rest, when resumed inside it) on this rank's share; returns this rank's
    [loss sum, sample count]."""
    state, train, device = run.state, run.train, run.device
    position = state.position
    if hasattr(state.sampler, "set_epoch"):
        state.sampler.set_epoch(epoch)
    sampler, batches = epoch_sampler(state, train["drop_last"])
    loader = training_batches(
        run.data.train,
        sampler,
        batch_size=train["batch_size"],
        device=device,
        num_workers=train["num_workers"],
        collate_fn=run.data.collate_fn,
        drop_last=train["drop_last"],
        skip_batches=position.step,
    )
    totals = torch.tensor(position.totals, dtype=torch.float64, device=device)
    BEACON.at(
        f"training epoch {epoch}, step {{}} (its batch, forward, and backward, in which DDP all-reduces the gradients)",
        position.step + 1,
    )
    with run.console.epoch_bar(epoch, train["max_epochs"], batches) as bar:
        for inputs, targets in run.clock.batches(loader):
            micro = MicroBatch.at(position.step, batches, train["accumulate"])
            loss, grad_norm = train_step(run, inputs, targets, micro)
            totals[0] += loss.detach().double() * targets.shape[0]
            totals[1] += targets.shape[0]
            position.step += 1
            bar.advance(loss)
            BEACON.progress(position.step + 1)
            if not micro.last:
                continue
            run.profiler.step()
            if train["check_sync"]:
                check_parameters_in_sync(state.model, f"step {position.step} of epoch {epoch}")
            log_step(run, loss, grad_norm)
            if position.step < batches and stops.agreed(micro.optimizer_step, device):
                write_last(run, False, totals)
                run.registry.pm.hook.ddpx_preempted(context=run.context)
                raise Preempted(
                    f"stopped on request {position.step} step(s) into epoch {epoch}; "
                    f"the checkpoint is {run.run_dir.last_checkpoint}"
                )
    state.epoch_order = None
    run.profiler.epoch_ended()
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # the epoch's queued kernels belong to its time
    return totals


def epoch_sampler(state: TrainingState, drop_last: bool) -> tuple[Any, int]:
    """This epoch's sampler and micro-batches: the sampler's, or the rest of an epoch continued
    from another world size (:mod:`ddpx.rank.loop.world_change`)."""
    if state.epoch_order is None:
        return state.sampler, state.batches_per_epoch
    rounding = math.floor if drop_last else math.ceil
    return EpochOrder(state.epoch_order), rounding(len(state.epoch_order) / state.batch_size)


def log_step(run: RunContext, loss: torch.Tensor, grad_norm: torch.Tensor | None) -> None:
    """Every ``train.log_every_n_steps`` optimizer steps rank 0 logs its loss, the learning rate
    and (when clipping) the gradient norm before clipping at the global optimizer step
    (``step/train_loss``, ``step/lr``, ``step/grad_norm``; an ensemble member's as
    ``member_<i>/step/...``); reading them waits for the step."""
    every = run.train["log_every_n_steps"]
    if not every or run.tracker is None:
        return
    global_step = run.state.global_step
    if global_step % every == 0:
        metrics = {"step/train_loss": float(loss.detach()), "step/lr": run.state.optimizer.param_groups[0]["lr"]}
        if grad_norm is not None:
            metrics["step/grad_norm"] = float(grad_norm)
        if run.member is not None:  # an ensemble member's steps: a curve of its own
            metrics = {run.member.metric_name(key): value for key, value in metrics.items()}
        run.tracker.log_metrics(metrics, step=global_step)


def train_step(run: RunContext, inputs, targets, micro: MicroBatch) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Forward in the recipe's precision and backward of one micro-batch (its loss divided by the
    micro-batches of its step, gradients synchronised on the last only); after the last, the
    optimizer step. Returns the loss and, when clipping, the gradient norm before clipping."""
    state = run.state
    inputs, targets = to_device(inputs, run.device), to_device(targets, run.device)
    if run.train["channels_last"]:
        inputs = _channels_last(inputs)
    if micro.first:
        state.optimizer.zero_grad(set_to_none=True)
    with nullcontext() if micro.last else without_gradient_sync(state.wrapped):
        with run.clock.phase("forward"), state.autocast():
            loss = state.loss_fn(state.step_model(inputs), targets)
        with run.clock.phase("backward"):
            state.scaler.scale(loss / micro.group_size if micro.group_size > 1 else loss).backward()
    if not micro.last:
        return loss, None
    with run.clock.phase("optimizer"):
        return loss, optimizer_step(run)


def optimizer_step(run: RunContext) -> torch.Tensor | None:
    """Clip (on unscaled gradients), step the optimizer, the scaler and the schedule; a frozen
    encoder's gradients are dropped first."""
    state, clip = run.state, run.train["clip_grad_norm"]
    grad_norm = None
    drop_frozen_gradients(run)
    if clip:
        state.scaler.unscale_(state.optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(state.wrapped.parameters(), clip)
        grad_norm = grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm  # a sharded norm
    state.scaler.step(state.optimizer)
    state.scaler.update()
    if state.scheduler is not None:
        state.scheduler.step()
    state.global_step += 1
    return grad_norm


def finish_epoch(run: RunContext, epoch: int, totals: torch.Tensor, started: float) -> float:
    """Dev evaluation, model selection, the checkpoint, the metrics (run folder, tracker, terminal);
    returns the dev metric."""
    state, metric = run.state, run.parts.metric
    train_seconds = time.perf_counter() - started
    BEACON.at(f"the end of epoch {epoch}: the dev evaluation and the checkpoint")
    summed = all_reduce_sum(totals)
    dev = evaluate(state.model, run.data.dev, **run.evaluation)
    improved = is_better(dev.metric, dev.loss, state.selection.best, metric, run.train["select_by"])
    if improved:
        state.selection.best, state.selection.best_epoch, state.selection.stale = (dev.metric, dev.loss), epoch, 0
        state.selection.best_state = clone_state(state.model.state_dict())
    else:
        state.selection.stale += 1
    metrics = {
        "train_loss": float(summed[0] / summed[1]),
        **dev.as_metrics("dev", metric.name),
        "lr": state.optimizer.param_groups[0]["lr"],
        "samples_per_s": float(summed[1]) / train_seconds,
        "epoch_s": time.perf_counter() - started,
        **run.clock.take(),
    }
    state.position = Position(epoch=epoch)
    with termination_after_records() if run.env.is_main else nullcontext():
        write_last(run, improved, torch.zeros(2, dtype=torch.float64))
        if run.env.is_main:
            run.record_epoch(epoch, metrics, improved)
    run.registry.pm.hook.ddpx_epoch_end(context=run.context, epoch=epoch, metrics=metrics)
    return dev.metric
