"""What a tracker registers (``register_trackers``): the tracker a job's rank 0 records the run with.

Plain data, like :mod:`ddpx.contract.specs` (which re-exports every name here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ddpx.contract.records import DatasetRecord

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ddpx.contract.job import Job


class Tracker(Protocol):
    """An experiment tracker, used on rank 0 only."""

    run_id: str | None

    def start(
        self, *, run_name: str, params: Mapping[str, Any], tags: Mapping[str, str], resume_run_id: str | None = None
    ) -> None:
        """Open a run; with ``resume_run_id``, continue that run (its parameters are already logged)."""
        ...

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None: ...

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        """Store a file with the run, under ``folder`` when given."""
        ...

    def log_dataset(self, dataset: DatasetRecord) -> None:
        """Record the run's input data (optional: trackers without it skip this)."""
        ...

    def set_tags(self, tags: Mapping[str, str]) -> None:
        """Tag the open run (optional): a search's pruned trial is tagged ``ddpx.trial_state=PRUNED``."""
        ...

    def note(self, text: str) -> None:
        """Show a short markdown note with the run: its result, in a line (optional)."""
        ...

    def log_model(self, folder: Path, register: str | None = None) -> None:
        """Store the best model (the run's ``model/`` folder) as the tracker's own kind of model,
        registering a version under ``register`` when given (optional)."""
        ...

    def finish(self, status: str, error: str | None = None) -> None: ...

    def describe(self) -> str:
        """One line telling the user where to look at the run."""
        ...


@dataclass(frozen=True)
class TrackerSpec:
    """A tracker: ``create(job)`` returns a :class:`Tracker` (called on rank 0 only).

    ``check(job)`` runs before anything starts and changes nothing (``--dry-run`` calls it): raise
    :class:`UserError` for a store that cannot record the run. ``prepare(job)`` runs right before the ranks start:
    set the store up once (create its tables, say). ``imports`` names the modules the tracker imports on rank 0
    (``"mlflow"``): a launcher may import them ahead, once (the spawn launcher's fork server does);
    ``imports_for(job)``, those that depend on the job's store (an sqlite store's module: rank 0 of each job a
    sweep or a study runs from one process would import it again)."""

    name: str
    description: str
    create: Callable[[Job], Tracker]
    check: Callable[[Job], None] | None = None
    prepare: Callable[[Job], None] | None = None
    imports: tuple[str, ...] = ()
    imports_for: Callable[[Job], tuple[str, ...]] | None = None
