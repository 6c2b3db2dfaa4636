"""``fit``: one rank's whole run, in four steps — build (data, model, training state), restore
(when the run continues), the epoch loop (:mod:`ddpx.rank.loop.epochs`; these two in
:mod:`ddpx.rank.loop.training`), and the final held-out evaluation of the best weights with its
reports and the exported model. An ensemble (``train.ensemble_size`` above 1) trains its members
on the same data one after another and evaluates their mean (:mod:`ddpx.rank.loop.ensemble`).

Every rank runs the same steps on identical splits; the model wrapper (``train.wrapper``, DDP by
default) starts every rank from rank 0's weights and keeps them equal. Every epoch rank 0 writes
``last.pt`` with everything needed to continue exactly, and ``best.pt`` when the epoch is the
best so far; a stop request (SIGUSR1) writes ``last.pt`` at a step boundary inside the epoch, and
a run started again continues from it (see :mod:`ddpx.rank.checkpoints.resume`).
"""

from __future__ import annotations

import time

from ddpx.contract.errors import UserError
from ddpx.contract.records import DataRequest, RunSummary, TaskData
from ddpx.rank.checkpoints.sharded import gathered
from ddpx.rank.diagnostics.stall import BEACON, progress_log
from ddpx.rank.loop.ensemble import fit_ensemble
from ddpx.rank.loop.evaluation import Predictions, evaluate, more_metrics, per_label_metrics
from ddpx.rank.loop.heldout_records import write_heldout_records
from ddpx.rank.loop.optim import seed_everything
from ddpx.rank.loop.training import train_model
from ddpx.rank.process_group.distributed import barrier, broadcast_object
from ddpx.rank.run_context import RunContext
from ddpx.records.dataset_record import dataset_record


def fit(run: RunContext) -> RunSummary:
    """Train and evaluate one run on this rank; returns the same summary on every rank."""
    started = time.perf_counter()
    seed_everything(run.train["seed"], run.train["deterministic"])
    BEACON.at(f"building the data of task {run.parts.task.name}")
    data = build_task_data(run)
    if run.tracker:
        run.tracker.log_dataset(dataset_record(run.parts.task.name, data, run.job.config["dataset"], run.train["seed"]))
    if run.train["ensemble_size"] > 1:
        summary, context = fit_ensemble(run, data, started)
    else:
        train_model(run, data)
        BEACON.at("the held-out evaluation, its reports and the exported model")
        summary, context = evaluate_heldout(run, started), run.context
    BEACON.at("the plugins' ddpx_fit_end hooks")
    run.registry.pm.hook.ddpx_fit_end(context=context, result=summary)
    return summary


def build_task_data(run: RunContext) -> TaskData:
    """The task's splits, identical on every rank; every rank needs a training sample."""
    env, task = run.env, run.parts.task
    request = DataRequest(
        params=run.job.config["dataset"],
        seed=run.train["seed"],
        rank=env.rank,
        world_size=env.world_size,
        local_rank=env.local_rank,
        barrier=barrier,
        log=progress_log(lambda text: run.console.print(f"data: {text}")),
        device=run.device,
        inputs=task.input_for(run.parts.model),
    )
    data = task.build_data(request)
    if len(data.train) < env.world_size:
        raise UserError(
            f"the training split has {len(data.train)} samples but the job has {env.world_size} ranks; every rank "
            "needs at least one. Use fewer ranks (--nproc) or more data."
        )
    return data


def evaluate_heldout(run: RunContext, started: float) -> RunSummary:
    """The best weights on the held-out split, exactly, and on dev for the calibration; rank 0
    writes the reports, the model and its calibration."""
    selection, metric = run.state.selection, run.parts.metric
    run.state.model.load_state_dict(selection.best_state)
    heldout = evaluate(run.state.model, run.data.heldout, keep_predictions=True, **run.evaluation)
    dev = evaluate(run.state.model, run.data.dev, keep_predictions=True, **run.evaluation)
    best_weights = gathered(selection.best_state)  # whole tensors of a sharded model, on every rank
    uncertainty = {}
    if run.env.is_main:
        uncertainty = write_heldout_records(run, run.data.info, dev.predictions, heldout.predictions, best_weights)
    point = run.evaluation["point"]
    points = heldout.predictions and Predictions(point(heldout.predictions.outputs), heldout.predictions.targets)
    by_label = per_label_metrics(points, metric, run.data.info.get("labels") or [], "heldout")
    also = [run.registry.get("metrics", name) for name in run.parts.task.heldout_metrics]
    return RunSummary(
        heldout={
            **heldout.as_metrics("heldout", metric.name),
            **broadcast_object(more_metrics(points, also, "heldout")),
        },
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
        uncertainty=broadcast_object(uncertainty),
    )
