"""Recording a finished run folder in a tracker after the fact: for a run whose tracking store
went away mid-run, or one trained with ``--tracking none``.

Everything comes from the run folder, which ddpx writes whatever the tracker does: params and
tags from ``job.json`` (as rank 0 records them), every epoch's metrics from ``metrics.jsonl``,
the held-out result, the note and the best model from ``summary.json`` and ``model/``, and the
report files. Per-step curves (``step/*``) are not kept in the folder and are not replayed.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ddpx.contract.errors import UserError
from ddpx.contract.records import RunSummary
from ddpx.launch.job import Job
from ddpx.records.guarded_tracker import GuardedTracker
from ddpx.records.run_dir import RunDir
from ddpx.records.tracking import record_result, start_job_run

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.plugin_host.registry import Registry


def load_finished_job(folder: Path, tracking: str, uri: str | None, experiment: str | None) -> tuple[Job, RunSummary]:
    run_dir = RunDir(folder.resolve())
    if not run_dir.job_file.is_file() or not run_dir.summary_file.is_file():
        raise UserError(f"{folder} is not a finished ddpx run folder (it needs job.json and summary.json). "
                        "Give the folder a run printed as its 'run folder', under ddpx-runs/.")
    job = Job.load(run_dir.job_file)
    job.run_dir = run_dir
    job.launch = replace(job.launch, tracking=tracking, tracking_uri=uri or job.launch.tracking_uri,
                         experiment=experiment or job.launch.experiment or job.recipe_name, system_metrics=False)
    return job, RunSummary.read(run_dir.summary_file)


def upload_run(registry: "Registry", folder: Path, *, tracking: str = "mlflow", uri: str | None = None,
               experiment: str | None = None) -> GuardedTracker:
    """Record the finished run in ``folder`` as a new run of ``tracking``; return its tracker."""
    job, summary = load_finished_job(folder, tracking, uri, experiment)
    spec = registry.get("trackers", tracking, key="--tracking")
    for step in (spec.check, spec.prepare):
        if step is not None:
            step(job)
    device_type = registry.get("backends", job.launch.backend).device_type
    tracker = start_job_run(registry, job, device_type, warn=lambda text: None)
    for line in job.run_dir.metrics_file.read_text(encoding="utf-8").splitlines() if job.run_dir.metrics_file.is_file() else []:
        record = json.loads(line)
        tracker.log_metrics({k: v for k, v in record.items() if k != "epoch"}, step=int(record["epoch"]))
    for path in sorted((job.run_dir.path / "reports").glob("*")):
        tracker.log_artifact(path)
    for path in sorted((job.run_dir.path / "model").glob("*")):
        tracker.log_artifact(path, "model")
    record_result(tracker, job, registry, summary)
    if tracker.error:
        raise UserError(f"the run folder could not be recorded: {tracker.error}. Check --tracking-uri and try again.")
    return tracker
