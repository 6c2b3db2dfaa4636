"""The tracking run of a job: what every run records (params and tags), opening it on rank 0,
and closing it from the launching process when the ranks stopped before they could.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddpx.config.values import flatten
from ddpx.contract.job import Job
from ddpx.contract.records import RunSummary
from ddpx.contract.specs import MetricSpec, TaskSpec
from ddpx.records.atomic_save import append_line, write_json_atomically
from ddpx.records.guarded_tracker import GuardedTracker

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.plugin_host.registry import Registry


def run_params(job: Job, *, device: str, world_size: int | None = None) -> dict[str, Any]:
    """The flattened resolved recipe plus how it ran — the same names for every recipe;
    ``world_size`` is the ranks' own count where it may differ from the planned (elastic) one."""
    params = {k: v for k, v in flatten(job.config).items() if k != "description"}
    launch, train, world_size = job.launch, job.config["train"], world_size or job.world_size
    params.update(
        {
            "launcher": launch.launcher,
            "backend": launch.backend,
            "device": device,
            "world_size": world_size,
            "nnodes": launch.node_range,
            "nproc_per_node": launch.nproc,
            "global_batch_size": train["batch_size"] * world_size * train["accumulate"],
            "precision": train["precision"],
        }
    )
    return params


def git_commit(cwd: Path | None = None) -> str | None:
    """The commit of the git checkout the run started in, if there is one."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def run_tags(job: Job, plugin_versions: Mapping[str, str], metric: MetricSpec) -> dict[str, str]:
    """Tags: ddpx version, plugin distributions, recipe, the held-out metric that judges the run
    and its direction, run folder and git commit."""
    tags = {
        "ddpx.version": _version("ddpx"),
        "ddpx.recipe": job.recipe_name,
        "ddpx.metric": f"heldout_{metric.name}",
        "ddpx.metric_direction": "max" if metric.greater_is_better else "min",
        "ddpx.recipe_source": job.recipe_source,
        "ddpx.run_dir": str(job.run_dir.path),
        "ddpx.plugins": ", ".join(f"{d}=={v}" for d, v in sorted(plugin_versions.items())),
    }
    if job.parent_run_id:  # a sweep's trial: MLflow nests it under the sweep's run
        tags["mlflow.parentRunId"] = job.parent_run_id
    tags.update(job.tags)
    commit = git_commit()
    if commit:
        tags["mlflow.source.git.commit"] = commit
    return tags


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


def append_metrics(path: Path, record: Mapping[str, Any]) -> None:
    """One JSON line per epoch in the run folder."""
    append_line(path, json.dumps(dict(record)))


def record_result(tracker: GuardedTracker, job: Job, task: TaskSpec, summary: RunSummary) -> None:
    """The end of a run in the tracker: held-out metrics, the note, the best model (when ``task``
    can predict with it), FINISHED."""
    tracker.log_metrics(
        {
            **summary.heldout,
            **summary.by_label,
            **({"best_epoch": float(summary.best_epoch)} if not summary.members else ensemble_metrics(summary)),
            "heldout_samples": float(summary.heldout_samples),
        }
    )
    tracker.note(result_note(summary))
    if job.launch.log_model and task.predictor is not None:
        tracker.log_model(job.run_dir.path / "model", register=job.launch.register)
    if summary.pruned_after is not None:  # a search's trial: its curve and held-out result kept, marked stopped
        tracker.set_tags({"ddpx.trial_state": "PRUNED", "ddpx.pruned_after_epoch": str(summary.pruned_after)})
        tracker.finish("KILLED")
        return
    tracker.finish("FINISHED")


def ensemble_metrics(summary: RunSummary) -> dict[str, float]:
    """An ensemble's dev result (its members' mean on dev), and each member's as ``member_<i>/...``:
    its held-out metrics, best epoch and best dev values."""
    metrics = {f"dev_{summary.metric}": summary.best_dev, "dev_loss": summary.best_dev_loss}
    for i, member in enumerate(summary.members):
        metrics.update(
            {f"member_{i}/{key}": value for key, value in {**member["heldout"], **member["by_label"]}.items()}
        )
        metrics[f"member_{i}/best_epoch"] = float(member["best_epoch"])
        metrics[f"member_{i}/best_dev_{summary.metric}"] = member["best_dev"]
        metrics[f"member_{i}/best_dev_loss"] = member["best_dev_loss"]
    return {key: float(value) for key, value in metrics.items() if value is not None}


def result_note(summary: RunSummary) -> str:
    """One markdown line on the run's result, for the tracker's note."""
    name, value = summary.heldout_metric
    pruned = f" Pruned by the search after epoch {summary.pruned_after}." if summary.pruned_after is not None else ""
    by = " (by dev loss)" if summary.selected_by == "loss" else ""
    if summary.members:
        epochs = ", ".join(str(member["best_epoch"]) for member in summary.members)
        return (
            f"**{name} {value:.4f}** over all {summary.heldout_samples} held-out samples, the mean of an ensemble "
            f"of {len(summary.members)} members (seeds {', '.join(str(m['seed']) for m in summary.members)}), "
            f"each at its best epoch on the dev split{by}: {epochs}.{pruned}"
        )
    return (
        f"**{name} {value:.4f}** over all {summary.heldout_samples} held-out samples; the best of "
        f"{summary.epochs_run} epoch(s) on the dev split{by} was epoch {summary.best_epoch}.{pruned}"
    )


def start_job_run(
    registry: Registry,
    job: Job,
    device_type: str,
    warn: Callable[[str], None],
    resume_run_id: str | None = None,
    world_size: int | None = None,
) -> GuardedTracker:
    """Open the job's tracking run — params, tags, the recipe file — or continue ``resume_run_id``,
    and note its id in the run folder (``tracking.json``).

    Rank 0 calls this as the job starts; the launching process calls it (through
    :func:`close_tracking_run`) when the ranks stopped before rank 0 got that far.
    """
    spec = registry.get("trackers", job.launch.tracking)
    tracker = GuardedTracker(spec.create(job), warn=warn)
    versions = {i.distribution: i.version for i in registry.pm.info.values() if i.distribution and i.version}
    metric = registry.get("metrics", registry.task_of(job.config).metric)
    tracker.start(
        run_name=job.run_dir.path.name,
        params=run_params(job, device=device_type, world_size=world_size),
        tags=run_tags(job, versions, metric),
        resume_run_id=resume_run_id,
    )
    if tracker.run_id:
        if not resume_run_id:
            tracker.log_artifact(job.run_dir.recipe_file)
        logged = read_tracking_record(job).get("epochs_logged", 0) if resume_run_id else 0
        try:
            write_tracking_record(job, tracker, logged)
        except OSError as exc:  # a full disk, say: the run is still recorded (and closed by the caller)
            warn(
                f"the run's id could not be noted in {job.run_dir.tracking_file} ({exc.strerror or exc}); "
                "`ddpx upload` cannot continue this run later."
            )
    return tracker


def read_tracking_record(job: Job) -> dict[str, Any]:
    """``tracking.json``: the tracker, its run id, and how many epochs it took (``{}`` if none)."""
    path = job.run_dir.tracking_file
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def write_tracking_record(job: Job, tracker: GuardedTracker, epochs_logged: int) -> None:
    """Note the run id and the epochs the tracker took, so that ``ddpx upload`` can finish this
    same run with the epochs after them if the tracker goes away later."""
    record = {"tracker": job.launch.tracking, "run_id": tracker.run_id, "epochs_logged": epochs_logged}
    write_json_atomically(job.run_dir.tracking_file, record)


def log_epoch(tracker: GuardedTracker, job: Job, epoch: int, metrics: Mapping[str, float]) -> None:
    """Log one epoch's metrics; while the tracker takes them, ``tracking.json`` says so."""
    tracker.log_metrics(metrics, step=epoch)
    if tracker.error is None and tracker.run_id:
        write_tracking_record(job, tracker, epoch)


def log_epochs_after(tracker: GuardedTracker, job: Job, logged: int) -> None:
    """Log the epochs of the run folder's ``metrics.jsonl`` after the first ``logged``."""
    path = job.run_dir.metrics_file
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        record = json.loads(line)
        if int(record["epoch"]) > logged:
            log_epoch(tracker, job, int(record["epoch"]), {k: v for k, v in record.items() if k != "epoch"})


def close_tracking_run(registry: Registry, job: Job, status: str, error: str) -> None:
    """Mark the job's tracking run ``status`` with ``error`` (for ranks stopped before they could),
    with the epochs in ``metrics.jsonl`` it did not take (rank 0 killed before it logged them).

    When the ranks stopped before rank 0 opened a run, the run is opened here first, so every
    failed job of this machine's rank 0 is recorded. mlflow is imported only on this path.
    """
    quiet = without_system_metrics(job)
    launch = job.launch
    record = read_tracking_record(job)
    if record:
        tracker = GuardedTracker(registry.get("trackers", record["tracker"]).create(quiet), warn=lambda text: None)
        tracker.start(run_name="", params={}, tags={}, resume_run_id=record["run_id"])
        log_epochs_after(tracker, job, int(record.get("epochs_logged", 0)))
    elif launch.tracking != "none" and launch.node_rank == 0 and launch.nnodes == 1:
        device_type = registry.get("backends", launch.backend).device_type
        tracker = start_job_run(registry, quiet, device_type, warn=lambda text: None)
    else:
        return
    tracker.finish(status, error=error)


def without_system_metrics(job: Job) -> Job:
    """The job as a tracker sees it when it only opens or closes a run (no sampling thread)."""
    return replace(job, launch=replace(job.launch, system_metrics=False))
