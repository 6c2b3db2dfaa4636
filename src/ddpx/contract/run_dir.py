"""The run folder: where a job keeps its definition, checkpoints, metrics and failures.

Layout (``ddpx-runs/<recipe>-<time>/`` by default)::

    job.json            the job every rank reads
    recipe.toml         the resolved recipe
    checkpoints/        last.pt and best.pt (an ensemble: last.pt, and member_<i>/best.pt per member)
    metrics.jsonl       one line per epoch (kept even when tracking fails)
    summary.json        rank 0's final result
    stopped.json        why the run stopped early on request (it resumes when started again)
    tracking.json       which tracker run rank 0 logs to
    rank0.json          on a machine other than rank 0's: the run folder rank 0 wrote to, the checkpoint it continued from
    failures/rank-N.json  what failed on rank N
    stalls/rank-N.json    where rank N stood still, while it did (see ddpx.rank.diagnostics.stall)
    launcher.log        the launcher's own output (torchrun)
    torchrun-logs/      torchrun's per-attempt, per-rank folders (instead of a new one in /tmp per run)
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from ddpx.contract.disk_full import disk_full_error
from ddpx.contract.errors import UserError
from ddpx.contract.names import check_path_name

DEFAULT_ROOT = "ddpx-runs"


@dataclass(frozen=True)
class RunDir:
    """One run's folder; ``path`` is where it is; ``made``, the highest folder its creation made
    (``./ddpx-runs`` on a first run), so that a run that never started leaves nothing behind."""

    path: Path
    made: Path | None = field(default=None, compare=False)

    @classmethod
    def create(cls, recipe_name: str, base: str | os.PathLike | None = None) -> RunDir:
        """A new, unique run folder under ``base`` (default ``./ddpx-runs``)."""
        parent = Path(base) if base else Path(DEFAULT_ROOT)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = parent / f"{check_path_name(recipe_name, 'name')}-{stamp}-{secrets.token_hex(2)}"
        try:
            made = make_folders(path)
        except OSError as exc:
            full = disk_full_error(
                exc, path.parent, "the run folder", "Free space there, or give --run-dir a folder on a larger disk."
            )
            raise full or UserError(
                f"cannot create the run folder {path}: {exc.strerror or exc}. Choose a folder you "
                "can write to with --run-dir DIR (the default is ./ddpx-runs)."
            ) from None
        return cls(path.resolve(), made.resolve())

    def discard(self) -> None:
        """Remove this folder, and the folders above it that its creation made once they are empty."""
        shutil.rmtree(self.path, ignore_errors=True)
        for parent in self.path.parents if self.made is not None else ():
            if not parent.is_relative_to(self.made):
                break
            try:
                parent.rmdir()  # only if empty: another run may have its folder there by now
            except OSError:
                break

    @property
    def job_file(self) -> Path:
        return self.path / "job.json"

    @property
    def recipe_file(self) -> Path:
        return self.path / "recipe.toml"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def last_checkpoint(self) -> Path:
        return self.checkpoints / "last.pt"

    @property
    def best_checkpoint(self) -> Path:
        return self.checkpoints / "best.pt"

    def member_best_checkpoint(self, index: int) -> Path:
        """An ensemble member's best weights, written when the member has finished."""
        return self.checkpoints / f"member_{index}" / "best.pt"

    @property
    def metrics_file(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def summary_file(self) -> Path:
        return self.path / "summary.json"

    @property
    def tracking_file(self) -> Path:
        return self.path / "tracking.json"

    @property
    def rank0_file(self) -> Path:
        return self.path / "rank0.json"

    @property
    def stopped_file(self) -> Path:
        return self.path / "stopped.json"

    @property
    def failures(self) -> Path:
        return self.path / "failures"

    @property
    def launcher_log(self) -> Path:
        return self.path / "launcher.log"

    @property
    def torchrun_logs(self) -> Path:
        return self.path / "torchrun-logs"

    def holds_rank_records(self) -> bool:
        """Whether anything of a rank's (or a launcher's log) is here: more than the job's definition."""
        written = (
            self.checkpoints,
            self.metrics_file,
            self.summary_file,
            self.stopped_file,
            self.tracking_file,
            self.failures,
            self.path / "stalls",
            self.launcher_log,
            self.torchrun_logs,
        )
        return any(path.exists() for path in written)


def latest_run_dir(recipe_name: str, base: str | None) -> RunDir | None:
    """The most recent run folder of ``recipe_name`` that has a checkpoint (``--resume auto``)."""
    parent = Path(base) if base else Path(DEFAULT_ROOT)
    candidates = [p for p in parent.glob(f"{recipe_name}-*") if (p / "checkpoints" / "last.pt").is_file()]
    if not candidates:
        return None
    return RunDir(max(candidates, key=lambda p: (p / "checkpoints" / "last.pt").stat().st_mtime).resolve())


def make_folders(path: Path) -> Path:
    """Make the new folder ``path`` and each missing one above it, top down; the highest this call
    made (a folder another process made meanwhile is not counted). When one cannot be made, those
    this call made are removed again before the error is raised."""
    made: list[Path] = []
    try:
        for folder in [*reversed(path.parents), path]:
            try:
                folder.mkdir()
            except FileExistsError:
                if folder == path:
                    raise
                continue
            made.append(folder)
    except OSError:
        for folder in reversed(made):
            folder.rmdir()
        raise
    return made[0]
