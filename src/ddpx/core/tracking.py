"""Tracking on rank 0: what every run records, and a guard so tracking never costs a result.

:class:`GuardedTracker` wraps the tracker a plugin provides: when the tracker fails (a server
that does not answer, say) training goes on, the user is told once, and the metrics still land
in the run folder's ``metrics.jsonl`` and ``summary.json``.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ddpx.core.components import DatasetRecord, Tracker
from ddpx.core.config import flatten
from ddpx.core.job import Job

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.core.registry import Registry


def run_params(job: Job, *, device: str) -> dict[str, Any]:
    """The flattened resolved recipe plus how it ran — the same names for every recipe."""
    params = {k: v for k, v in flatten(job.config).items() if k != "description"}
    params.update(
        {
            "launcher": job.launcher,
            "backend": job.backend,
            "device": device,
            "world_size": job.world_size,
            "nnodes": job.nnodes,
            "nproc_per_node": job.nproc_per_node,
            "global_batch_size": job.config["train"]["batch_size"] * job.world_size,
            "precision": job.config["train"]["precision"],
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


def run_tags(job: Job, plugin_versions: Mapping[str, str]) -> dict[str, str]:
    """Tags: ddpx version, plugin distributions, recipe, run folder and git commit."""
    tags = {
        "ddpx.version": _version("ddpx"),
        "ddpx.recipe": job.recipe_name,
        "ddpx.recipe_source": job.recipe_source,
        "ddpx.run_dir": job.run_dir,
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


class GuardedTracker:
    """Forwards to a tracker until it fails once; then warns and keeps quiet."""

    def __init__(self, tracker: Tracker, warn: Callable[[str], None]):
        self._tracker: Tracker | None = tracker
        self._warn = warn
        self.run_id: str | None = None
        self.error: str | None = None

    def _call(self, what: str, fn: Callable[[Tracker], Any]) -> None:
        if self._tracker is None:
            return
        try:
            fn(self._tracker)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
            self._warn(
                f"tracking failed while trying to {what} ({self.error}); training goes on without it, and every "
                "metric is still written to the run folder (metrics.jsonl, summary.json)."
            )
            self._tracker = None

    def start(self, *, run_name: str, params: Mapping[str, Any], tags: Mapping[str, str],
              resume_run_id: str | None = None) -> None:
        self._call("start the run", lambda t: t.start(run_name=run_name, params=params, tags=tags,
                                                      resume_run_id=resume_run_id))
        if self._tracker is not None:
            self.run_id = self._tracker.run_id

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        self._call("log metrics", lambda t: t.log_metrics(metrics, step))

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        self._call(f"log the artifact {path.name}", lambda t: t.log_artifact(path, folder))

    def log_dataset(self, dataset: DatasetRecord) -> None:
        if self._tracker is not None and hasattr(self._tracker, "log_dataset"):
            self._call("record the dataset", lambda t: t.log_dataset(dataset))

    def finish(self, status: str, error: str | None = None) -> None:
        self._call("close the run", lambda t: t.finish(status, error))

    def describe(self) -> str | None:
        if self._tracker is None:
            return None
        try:
            return self._tracker.describe()
        except Exception:
            return None


def append_metrics(path: Path, record: Mapping[str, Any]) -> None:
    """One JSON line per epoch in the run folder."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(dict(record)) + "\n")


def start_job_run(registry: "Registry", job: Job, device_type: str, warn: Callable[[str], None],
                  resume_run_id: str | None = None) -> GuardedTracker:
    """Open the job's tracking run — params, tags, the recipe file — or continue ``resume_run_id``,
    and note its id in the run folder (``tracking.json``).

    Rank 0 calls this as the job starts; the launching process calls it (through
    :func:`close_tracking_run`) when the ranks stopped before rank 0 got that far.
    """
    spec = registry.get("trackers", job.tracking)
    tracker = GuardedTracker(spec.create(job), warn=warn)
    versions = {i.distribution: i.version for i in registry.pm.info.values() if i.distribution and i.version}
    tracker.start(run_name=Path(job.run_dir).name, params=run_params(job, device=device_type),
                  tags=run_tags(job, versions), resume_run_id=resume_run_id)
    if tracker.run_id:
        if not resume_run_id:
            tracker.log_artifact(job.paths.recipe_file)
        job.paths.tracking_file.write_text(json.dumps({"tracker": job.tracking, "run_id": tracker.run_id}),
                                           encoding="utf-8")
    return tracker


def close_tracking_run(registry: "Registry", job: Job, status: str, error: str) -> None:
    """Mark the job's tracking run ``status`` with ``error`` (for ranks stopped before they could).

    When the ranks stopped before rank 0 opened a run, the run is opened here first, so every
    failed job of this machine's rank 0 is recorded. mlflow is imported only on this path.
    """
    quiet = replace(job, system_metrics=False)
    if job.paths.tracking_file.is_file():
        record = json.loads(job.paths.tracking_file.read_text(encoding="utf-8"))
        tracker = GuardedTracker(registry.get("trackers", record["tracker"]).create(quiet), warn=lambda text: None)
        tracker.start(run_name="", params={}, tags={}, resume_run_id=record["run_id"])
    elif job.tracking != "none" and job.node_rank == 0 and job.nnodes == 1:
        device_type = registry.get("backends", job.backend).device_type
        tracker = start_job_run(registry, quiet, device_type, warn=lambda text: None)
    else:
        return
    tracker.finish(status, error=error)
