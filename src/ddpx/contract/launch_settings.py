"""How the user asked to run a recipe: the one record of launch settings.

``ddpx recipe`` and ``ddpx sweep`` build their options from these fields (each field's
``metadata`` holds its flag and help), the planner resolves ``nproc`` and ``backend`` for this
machine, and the job every rank reads carries the resolved record unchanged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

from ddpx.contract.errors import UserError


def _option(default: Any, help: str, flag: str | None = None, **extra: Any) -> Any:
    return field(default=default, metadata={"help": help, "flag": flag, **extra})


@dataclass
class LaunchSettings:
    """Where and how the ranks of a job start, and where the run is recorded."""

    launcher: str = _option("spawn", "How ranks start: spawn, torchrun, slurm, or a plugin's.")
    nproc: int | None = _option(None, "Ranks per node.  [default: one per GPU, or 2 without GPUs]", kind=int)
    nnodes: int = _option(
        1,
        "Number of machines, or MIN:MAX for an elastic torchrun job that goes on while at least "
        "MIN take part (restarted from its last checkpoint when a machine leaves or joins).",
        kind=str,
        metavar="N|MIN:MAX",
    )
    min_nodes: int | None = None  # an elastic job's least number of machines (``--nnodes MIN:MAX``); nnodes is MAX
    node_rank: int = _option(0, "This machine's index (multi-node).")
    master_addr: str = _option("127.0.0.1", "Address of node 0 (spawn launcher).")
    master_port: int | None = _option(None, "Rendezvous port on node 0.  [default: a free port]", kind=int)
    rdzv_endpoint: str | None = _option(None, "HOST:PORT rendezvous for multi-node torchrun.")
    max_restarts: int = _option(0, "Restarts on failure (torchrun).")
    backend: str = _option("auto", "auto (nccl with one GPU per rank, else gloo), nccl or gloo.")
    tracking: str = _option("mlflow", "Tracker: mlflow, or none to disable.")
    tracking_uri: str | None = _option(
        None, "MLflow store or server.  [default: sqlite:///mlflow.db here]", envvar="MLFLOW_TRACKING_URI"
    )
    experiment: str | None = _option(
        None, "MLflow experiment.  [default: the recipe's name; a sweep's trials join their parent there]"
    )
    system_metrics: bool = _option(
        True,
        "Record CPU, memory and GPU use with the run (MLflow system metrics, rank 0; env DDPX_SYSTEM_METRICS).",
        "--system-metrics/--no-system-metrics",
        envvar="DDPX_SYSTEM_METRICS",
    )
    runs_dir: str | None = _option(None, "Folder for run folders.  [default: ./ddpx-runs]", "--run-dir")
    timeout_s: float = _option(
        1800.0, "Seconds a rank waits for the others in a collective before the job fails.", "--timeout"
    )
    stall_report_s: float = _option(
        300.0,
        "Report ranks that make no progress for this many seconds (which phase, "
        "which collective, their pids); 0: never.",
        "--stall-report",
    )
    log_model: bool = _option(
        True,
        "Log the best model as an MLflow model at the end (a few seconds; env DDPX_LOG_MODEL).",
        "--log-model/--no-log-model",
        envvar="DDPX_LOG_MODEL",
    )
    register: str | None = _option(
        None,
        "Also register the best model as a new version of this MLflow registered model.",
        metavar="NAME",
        only="recipe",
    )
    resume: str | None = _option(
        None,
        "Continue the latest run of this recipe (auto) or from a checkpoint file.",
        metavar="auto|PATH",
        only="recipe",
    )
    launcher_options: dict[str, Any] = field(default_factory=dict)  # the chosen launcher's own options

    @classmethod
    def from_environment(cls, **given: Any) -> LaunchSettings:
        """Settings as ``ddpx recipe`` makes them from the same environment: an option with an
        environment variable (``DDPX_LOG_MODEL``, ``DDPX_SYSTEM_METRICS``, ``MLFLOW_TRACKING_URI``)
        takes its value when set; ``given`` values come before both."""
        from_env = {  # an empty variable counts as unset, as click counts it
            option.name: _from_text(os.environ[option.metadata["envvar"]], option.default)
            for option in fields(cls)
            if os.environ.get(option.metadata.get("envvar", "")) and option.name not in given
        }
        return cls(**from_env, **given)

    @property
    def world_size(self) -> int:
        """Ranks in the job (after planning, when ``nproc`` is known); an elastic job's most."""
        return (self.nproc or 0) * self.nnodes

    @property
    def elastic(self) -> bool:
        """True when the number of machines may change while the job runs (``--nnodes MIN:MAX``)."""
        return self.min_nodes is not None and self.min_nodes != self.nnodes

    @property
    def node_range(self) -> str:
        """``--nnodes`` as given: ``N``, or ``MIN:MAX`` for an elastic job."""
        return f"{self.min_nodes}:{self.nnodes}" if self.elastic else str(self.nnodes)


def _from_text(text: str, default: Any) -> Any:
    """An environment variable's text as its option's type (a flag reads as click reads it)."""
    if not isinstance(default, bool):
        return text
    if text.strip().lower() in ("1", "true", "t", "yes", "y", "on"):
        return True
    if text.strip().lower() in ("0", "false", "f", "no", "n", "off"):
        return False
    raise UserError(f"{text!r} is not a true or false value: set it to true or false.")


def parse_node_range(text: str | int) -> tuple[int | None, int]:
    """``--nnodes``: ``N`` gives ``(None, N)``, ``MIN:MAX`` gives ``(MIN, MAX)``."""
    parts = str(text).strip().split(":")
    if len(parts) > 2 or not all(part.strip().isdigit() for part in parts):
        raise UserError(
            f"--nnodes takes a number of machines (2) or, for an elastic torchrun job, a range MIN:MAX "
            f"(1:4), not {text!r}."
        )
    numbers = [int(part) for part in parts]
    return (None, numbers[0]) if len(numbers) == 1 else (numbers[0], numbers[1])


def default_nproc(gpus: int) -> int:
    """One rank per GPU, or 2 ranks on a machine without one."""
    return gpus if gpus > 0 else 2
