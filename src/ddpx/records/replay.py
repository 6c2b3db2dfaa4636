"""Recording a finished run folder in a tracker after the fact: for a run whose tracking store
went away mid-run, or one trained with ``--tracking none``.

Everything comes from the run folder, which ddpx writes whatever the tracker does: params and
tags from ``job.json`` (as rank 0 records them), every epoch's metrics from ``metrics.jsonl``
(only those after the last one the tracker took, when its own run is continued),
the held-out result, the note and the best model from ``summary.json`` and ``model/``, and the
report files. Per-step curves (``step/*``) are not kept in the folder and are not replayed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ddpx.contract.errors import UserError
from ddpx.contract.job import Job
from ddpx.contract.records import RunSummary
from ddpx.contract.run_dir import RunDir
from ddpx.records.guarded_tracker import GuardedTracker
from ddpx.records.tracking import log_epochs_after, read_tracking_record, record_result, start_job_run

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.plugin_host.registry import Registry


def load_finished_job(
    folder: Path, tracking: str, uri: str | None, experiment: str | None, register: str | None = None
) -> tuple[Job, RunSummary]:
    run_dir = RunDir(folder.resolve())
    if not run_dir.job_file.is_file() or not run_dir.summary_file.is_file():
        raise UserError(
            f"{folder} is not a finished ddpx run folder (it needs job.json and summary.json). "
            "Give the folder a run printed as its 'run folder', under ddpx-runs/."
        )
    job = Job.load(run_dir.job_file)
    job.run_dir = run_dir
    job.launch = replace(
        job.launch,
        tracking=tracking,
        tracking_uri=uri or job.launch.tracking_uri,
        experiment=experiment or job.launch.experiment or job.recipe_name,
        system_metrics=False,
        log_model=job.launch.log_model or register is not None,
        register=register or job.launch.register,
    )
    return job, RunSummary.read(run_dir.summary_file)


def upload_run(
    registry: Registry,
    folder: Path,
    *,
    tracking: str = "mlflow",
    uri: str | None = None,
    experiment: str | None = None,
    register: str | None = None,
) -> GuardedTracker:
    """Record the finished run in ``folder`` with ``tracking``; return its tracker.

    If the store already holds the run's own tracking run (its store went away mid-run and is
    back), that run is finished with the epochs it lacks; otherwise a new run gets everything. The best
    model is logged as an MLflow model, and with ``register`` a new version of that registered model.
    """
    job, summary = load_finished_job(folder, tracking, uri, experiment, register)
    spec = registry.get("trackers", tracking, key="--tracking")
    for step in (spec.check, spec.prepare):
        if step is not None:
            step(job)
    tracker, epochs_logged = open_run(registry, job)
    log_epochs_after(tracker, job, epochs_logged)
    for path in sorted((job.run_dir.path / "reports").glob("*")):
        tracker.log_artifact(path)
    for path in sorted((job.run_dir.path / "model").glob("*")):
        tracker.log_artifact(path, "model")
    record_result(tracker, job, registry.task_of(job.config), summary)
    if tracker.error:
        raise UserError(f"the run folder could not be recorded: {tracker.error}. Check --tracking-uri and try again.")
    return tracker


def open_run(registry: Registry, job: Job) -> tuple[GuardedTracker, int]:
    """The run's own tracking run continued, with the number of epochs it holds, if the store
    has it; else a new run (holding none)."""
    device_type = registry.get("backends", job.launch.backend).device_type
    record = read_tracking_record(job)
    if record.get("tracker") == job.launch.tracking and record.get("run_id"):
        own = start_job_run(registry, job, device_type, warn=lambda text: None, resume_run_id=record["run_id"])
        if own.error is None:
            return own, int(record.get("epochs_logged", 0))
    return start_job_run(registry, job, device_type, warn=lambda text: None), 0
