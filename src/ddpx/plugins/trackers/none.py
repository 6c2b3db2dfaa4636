"""The ``none`` tracker (``--tracking none``): records nothing beyond the run folder."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ddpx.api import TrackerSpec, hookimpl


class NoTracker:
    run_id = None

    def __init__(self, job: Any):
        self.run_dir = job.run_dir.path

    def start(
        self, *, run_name: str, params: Mapping[str, Any], tags: Mapping[str, str], resume_run_id: str | None = None
    ) -> None:
        pass

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        pass

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        pass

    def log_dataset(self, dataset: Any) -> None:
        pass

    def finish(self, status: str, error: str | None = None) -> None:
        pass

    def describe(self) -> str:
        return f"Tracking was off; the metrics are in {self.run_dir}/metrics.jsonl"


@hookimpl
def register_trackers(register):
    register(TrackerSpec("none", "no tracking; metrics stay in the run folder", NoTracker))
