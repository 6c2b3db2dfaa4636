"""The job: a resolved recipe plus how to launch it — the one record every rank reads.

The launching process writes it to ``<run dir>/job.json`` before the ranks start; each rank,
however it was started (spawn, torchrun, srun), reads the same file, so all ranks run the same
configuration.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ddpx.contract.launch_settings import LaunchSettings
from ddpx.contract.run_dir import RunDir


@dataclass
class Job:
    """Everything a rank needs to know about the run it belongs to."""

    recipe_name: str
    recipe_source: str
    config: dict[str, Any]
    launch: LaunchSettings  # resolved: nproc and backend are this machine's
    requested: str = ""  # the recipe name or path the user gave
    run_dir: RunDir | None = None  # set when the run folder is created
    resume_from: str | None = None  # the checkpoint a first start continues from
    parent_run_id: str | None = None  # the sweep run this job is a trial of
    tags: dict[str, str] = field(default_factory=dict)  # extra tracking tags (a sweep's trial number, say)
    search: dict[str, Any] | None = None  # an Optuna trial's link: storage, study, trial_id (rank/loop/pruning.py)
    # slow modules the ranks will import (launch/plan.py: job_imports): tracker, metrics, model, task, figures
    imports: list[str] = field(default_factory=list)

    @property
    def world_size(self) -> int:
        return self.launch.world_size

    def save(self) -> Path:
        path = self.run_dir.job_file
        values = {**asdict(self), "run_dir": str(self.run_dir.path)}
        path.write_text(json.dumps(values, indent=2, sort_keys=True), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> Job:
        values = json.loads(Path(path).read_text(encoding="utf-8"))
        values["launch"] = LaunchSettings(**values["launch"])
        values["run_dir"] = RunDir(Path(values["run_dir"]))
        return cls(**values)
