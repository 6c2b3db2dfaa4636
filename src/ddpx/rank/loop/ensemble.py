"""An ensemble's run (``train.ensemble_size=K`` above 1): K members that differ only by seed,
trained one after another, each by every rank of the job exactly as a single model is (the
wrapper, the epoch loop, exact dev selection, ``last.pt``), then evaluated together as one model.

One member after another, each on all ranks, rather than members side by side on subsets of the
ranks: every member then trains with the recipe's global batch and schedule, as a single run
does, whatever the number of ranks; the members' answers and the ensemble's are the same for any
number of ranks, as a single run's are; and a member runs with every tool of a single run
(sharded wrappers, resuming, a stop request).

Member ``i`` draws its initial weights, its shuffling and its dropout from ``train.seed + i``;
the splits come from ``train.seed`` and are built once, so every member trains, is selected and is
evaluated on the same samples. When a member has finished, rank 0 writes its best dev epoch's
weights to ``checkpoints/member_<i>/best.pt`` with its record (seed, best epoch, epochs, best dev
values). The ensemble's answer on dev and held-out is the members' mean with its spread
(:mod:`ddpx.records.ensemble`): its dev value is what a sweep or a study chooses on, its held-out
value is the run's (the task's loss and metric of the mean). Rank 0 fits the calibration on the
dev answer and writes the held-out reports (mean and spread; a regression's answered variance,
its members' spread squared, as a variance head's), the model (every member's weights,
:mod:`ddpx.records.model_export`) and, in the summary, each member's record with its own held-out
metrics.

A run that continues (a stop request, a restart) goes on where it stood: ``last.pt`` names the
member it was training; the members before it are read back from their ``best.pt`` and
evaluated again, that member continues from ``last.pt``, and the ones after it start afresh.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ddpx.contract.outputs import point_of
from ddpx.contract.records import FitContext, RunSummary, TaskData
from ddpx.contract.run_dir import RunDir
from ddpx.rank.checkpoints.sharded import gathered
from ddpx.rank.diagnostics.stall import BEACON
from ddpx.rank.loop.evaluation import Predictions, evaluate, more_metrics, per_label_metrics
from ddpx.rank.loop.heldout_records import write_heldout_records
from ddpx.rank.loop.losses import loss_function
from ddpx.rank.loop.optim import autocast_factory, seed_everything
from ddpx.rank.loop.training import train_model
from ddpx.rank.process_group.distributed import broadcast_object
from ddpx.rank.run_context import Member, RunContext
from ddpx.records.checkpoint_file import load_checkpoint, model_state_from, save_checkpoint
from ddpx.records.ensemble import EnsembleModel, answer, combine


@dataclass
class MemberResult:
    """One member at its best dev epoch: its record, its model on this rank, and on rank 0 its
    gathered dev and held-out outputs and its whole weights."""

    record: dict[str, Any]
    model: torch.nn.Module
    dev: Predictions | None
    heldout: Predictions | None
    weights: dict[str, torch.Tensor] | None


def fit_ensemble(run: RunContext, data: TaskData, started: float) -> tuple[RunSummary, FitContext]:
    """Train (or read back) every member, then evaluate their mean; the summary, and what the
    ``ddpx_fit_end`` hooks are told (the members as one :class:`EnsembleModel`)."""
    size, seed = run.train["ensemble_size"], run.train["seed"]
    finished = finished_members(run)
    results: list[MemberResult] = []
    for index in range(size):
        member = Member(index, size, seed + index, sum(r.record["epochs_run"] for r in results))
        resume = run.resume if run.resume is not None and run.resume.get("ensemble_member") == index else None
        context = run.for_member(member, resume)
        run.console.print(f"ensemble member {index} ({index + 1} of {size}): seed {member.seed}")
        results.append(
            read_member(context, data, finished[index]) if index < len(finished) else train_member(context, data)
        )
    BEACON.at("the ensemble's held-out evaluation, its reports and the exported model")
    summary = ensemble_summary(run, data, results, started)
    return summary, run.fit_context(EnsembleModel([r.model for r in results], run.parts.task.loss))


def finished_members(run: RunContext) -> list[str]:
    """The ``best.pt`` of each member the run continued from had finished, in order: rank 0 looks
    beside the checkpoint it continues from and tells every rank (which then reads them)."""
    found: list[str] = []
    if run.env.is_main and run.resume is not None:
        folder = RunDir(Path(run.resume["source"]).parent.parent)
        for index in range(run.resume.get("ensemble_member", 0) + 1):
            path = folder.member_best_checkpoint(index)
            if not path.is_file():
                break
            found.append(str(path))
    return broadcast_object(found)


def train_member(run: RunContext, data: TaskData) -> MemberResult:
    """Train one member from its seed (or continue it; ``run`` is the member's context, see
    :meth:`RunContext.for_member`); rank 0 writes its best weights and record."""
    seed_everything(run.train["seed"], run.train["deterministic"])
    train_model(run, data)
    state = run.state
    selection = state.selection
    state.model.load_state_dict(selection.best_state)
    weights = {k: v.detach().cpu() for k, v in gathered(selection.best_state).items()}  # every rank gathers
    record = {
        "seed": run.member.seed,
        "best_epoch": selection.best_epoch,
        "epochs_run": state.position.epoch,
        "best_dev": selection.best[0] if selection.best else None,
        "best_dev_loss": selection.best[1] if selection.best else None,
    }
    if not run.env.is_main:
        return evaluated(run, data, state.model, record, None)
    contents = {
        "model": weights,
        "recipe": run.job.config,
        "task_info": data.info,
        "ensemble_member": run.member.index,
        "ensemble_record": record,
    }
    save_checkpoint(run.best_checkpoint, contents)
    return evaluated(run, data, state.model, record, weights)


def read_member(run: RunContext, data: TaskData, path: str) -> MemberResult:
    """A member the run had finished before it continued: its best weights and record, read back."""
    BEACON.at(f"reading back ensemble member {run.member.index} from {path}")
    saved = load_checkpoint(path)
    model = run.parts.model.build({k: v for k, v in run.job.config["model"].items() if k != "name"}, data.info)
    weights = model_state_from(saved)
    model.load_state_dict(weights)
    model.to(run.device)
    run.data = data
    run.evaluate_with(
        data,
        loss_function(run.parts.task.loss),
        autocast_factory(run.device, run.train["precision"]),
    )
    run.console.print(f"read back from {path}")
    if run.env.is_main and Path(path) != run.best_checkpoint:  # continued from another run's folder
        save_checkpoint(run.best_checkpoint, saved)
    return evaluated(run, data, model, dict(saved["ensemble_record"]), weights if run.env.is_main else None)


def evaluated(
    run: RunContext, data: TaskData, model: torch.nn.Module, record: dict[str, Any], weights: Any
) -> MemberResult:
    """The member's exact dev and held-out outputs (gathered on rank 0) and its held-out metrics."""
    metric = run.parts.metric
    dev = evaluate(model, data.dev, keep_predictions=True, **run.evaluation)
    heldout = evaluate(model, data.heldout, keep_predictions=True, **run.evaluation)
    by_label = per_label_metrics(points(heldout.predictions, run), metric, data.info.get("labels") or [], "heldout")
    record.update(heldout=heldout.as_metrics("heldout", metric.name), by_label=broadcast_object(by_label))
    run.console.print(
        f"member {run.member.index}: heldout_{metric.name} {heldout.metric:.4f} (best dev epoch "
        f"{record['best_epoch']} of {record['epochs_run']})"
    )
    return MemberResult(record, model, dev.predictions, heldout.predictions, weights)


def mean_of(outputs: list[Predictions], loss: str) -> tuple[Predictions, Predictions, torch.Tensor]:
    """The members' mean as one model's outputs (float32, as evaluated outputs are), what the
    ensemble answers (a regression's with its variance: :func:`~ddpx.records.ensemble.answer`), and
    its spread."""
    mean, spread = combine(torch.stack([p.outputs for p in outputs]), loss)
    targets = outputs[0].targets
    return Predictions(mean.float(), targets), Predictions(answer(mean, spread, loss).float(), targets), spread.float()


def points(predictions: Predictions | None, run: RunContext) -> Predictions | None:
    """The point predictions in ``predictions`` (the mean of a variance head's), for the metrics."""
    return predictions and Predictions(point_of(predictions.outputs, run.parts.task.loss), predictions.targets)


def scored(predictions: Predictions, run: RunContext) -> tuple[float, float]:
    """(metric, mean loss) over exactly these predictions."""
    loss = loss_function(run.parts.task.loss)(predictions.outputs, predictions.targets)
    point = points(predictions, run)
    return float(run.parts.metric.compute(point.targets.numpy(), point.outputs.numpy())), float(loss)


def ensemble_summary(run: RunContext, data: TaskData, results: list[MemberResult], started: float) -> RunSummary:
    """Rank 0 scores the members' mean on dev and held-out and writes the reports and the model;
    every rank returns the same summary."""
    metric, loss = run.parts.metric, run.parts.task.loss
    values = None
    if run.env.is_main:
        dev, dev_answer, _ = mean_of([r.dev for r in results], loss)
        heldout, heldout_answer, spread = mean_of([r.heldout for r in results], loss)
        weights = [r.weights for r in results]
        uncertainty = write_heldout_records(run, data.info, dev_answer, heldout_answer, weights, spread)
        by_label = per_label_metrics(points(heldout, run), metric, data.info.get("labels") or [], "heldout")
        also = [run.registry.get("metrics", name) for name in run.parts.task.heldout_metrics]
        more = more_metrics(points(heldout, run), also, "heldout")
        values = (scored(dev, run), scored(heldout, run), by_label, more, uncertainty)
    (dev_value, dev_loss), (heldout_value, heldout_loss), by_label, more, uncertainty = broadcast_object(values)
    return RunSummary(
        heldout={f"heldout_{metric.name}": heldout_value, "heldout_loss": heldout_loss, **more},
        by_label=by_label,
        metric=metric.name,
        greater_is_better=metric.greater_is_better,
        best_dev=dev_value,
        best_epoch=0,
        epochs_run=sum(r.record["epochs_run"] for r in results),
        wall_seconds=time.perf_counter() - started,
        heldout_samples=len(data.heldout),
        selected_by=run.train["select_by"],
        best_dev_loss=dev_loss,
        members=[r.record for r in results],
        uncertainty=uncertainty,
    )
