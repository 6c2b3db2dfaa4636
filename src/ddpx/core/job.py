"""The job: a resolved recipe plus how to launch it — the one record every rank reads.

The CLI writes it to ``<run dir>/job.json`` before launching; each rank, however it was started
(spawn, torchrun, srun), reads the same file, so all ranks run the same configuration.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ddpx.core.run_dir import RunDir


@dataclass
class Job:
    """Everything a rank needs to know about the run it belongs to."""

    recipe_name: str
    recipe_source: str
    config: dict[str, Any]
    run_dir: str
    launcher: str = "spawn"
    backend: str = "gloo"
    nproc_per_node: int = 2
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int | None = None
    rdzv_endpoint: str | None = None
    max_restarts: int = 0
    tracking: str = "mlflow"
    tracking_uri: str | None = None
    experiment: str = "ddpx"
    resume_from: str | None = None
    timeout_s: float = 1800.0
    launcher_options: dict[str, Any] = field(default_factory=dict)
    system_metrics: bool = True
    parent_run_id: str | None = None  # the sweep run this job is a trial of
    tags: dict[str, str] = field(default_factory=dict)  # extra tracking tags (a sweep's trial number, say)

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes

    @property
    def paths(self) -> RunDir:
        return RunDir(Path(self.run_dir))

    def save(self) -> Path:
        path = self.paths.job_file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2, sort_keys=True), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Job":
        return cls(**json.loads(Path(path).read_text(encoding="utf-8")))
