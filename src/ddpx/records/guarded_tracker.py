"""A guard around the tracker a plugin provides, so that tracking never costs a result.

When the tracker fails (a server that does not answer, say) training goes on, the user is told
once, and the metrics still land in the run folder's ``metrics.jsonl`` and ``summary.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ddpx.contract.disk_full import disk_full_cause
from ddpx.contract.records import DatasetRecord
from ddpx.contract.specs import Tracker


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
            full = disk_full_cause(exc)  # said in a line, not with the store's whole statement
            self.error = (
                f"no space left on the tracking store's disk ({full})" if full else f"{type(exc).__name__}: {exc}"
            )
            self._warn(
                f"tracking failed while trying to {what} ({self.error}); training goes on without it, and every "
                "metric is still written to the run folder (metrics.jsonl, summary.json)."
            )
            self._tracker = None

    def start(
        self, *, run_name: str, params: Mapping[str, Any], tags: Mapping[str, str], resume_run_id: str | None = None
    ) -> None:
        self._call(
            "start the run", lambda t: t.start(run_name=run_name, params=params, tags=tags, resume_run_id=resume_run_id)
        )
        if self._tracker is not None:
            self.run_id = self._tracker.run_id

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        self._call("log metrics", lambda t: t.log_metrics(metrics, step))

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        self._call(f"log the artifact {path.name}", lambda t: t.log_artifact(path, folder))

    def log_dataset(self, dataset: DatasetRecord) -> None:
        if self._tracker is not None and hasattr(self._tracker, "log_dataset"):
            self._call("record the dataset", lambda t: t.log_dataset(dataset))

    def log_model(self, folder: Path, register: str | None = None) -> None:
        """A model that cannot be logged is a warning; the run is still recorded and closed."""
        if self._tracker is None or not hasattr(self._tracker, "log_model"):
            return
        try:
            self._tracker.log_model(folder, register)
        except Exception as exc:
            self._warn(
                f"the best model could not be logged to the tracker ({type(exc).__name__}: {exc}); it is "
                f"in the run folder ({folder}) and `ddpx predict` reads it there."
            )

    def set_tags(self, tags: Mapping[str, str]) -> None:
        if self._tracker is not None and hasattr(self._tracker, "set_tags"):
            self._call("tag the run", lambda t: t.set_tags(tags))

    def note(self, text: str) -> None:
        if self._tracker is not None and hasattr(self._tracker, "note"):
            self._call("write the run's note", lambda t: t.note(text))

    def finish(self, status: str, error: str | None = None) -> None:
        self._call("close the run", lambda t: t.finish(status, error))

    def describe(self) -> str | None:
        if self._tracker is None:
            return None
        try:
            return self._tracker.describe()
        except Exception:
            return None
