"""The options ``ddpx recipe`` and ``ddpx sweep`` share: how ranks start and where runs are recorded."""

from __future__ import annotations

from typing import Any, Callable

import click

from ddpx.core.launching import LaunchOptions

_OPTIONS = [
    click.option("--launcher", default="spawn", show_default=True, help="How ranks start: spawn, torchrun, slurm, or a plugin's."),
    click.option("--nproc", type=int, default=None, help="Ranks per node.  [default: one per GPU, or 2 without GPUs]"),
    click.option("--nnodes", type=int, default=1, show_default=True, help="Number of machines."),
    click.option("--node-rank", type=int, default=0, show_default=True, help="This machine's index (multi-node)."),
    click.option("--master-addr", default="127.0.0.1", show_default=True, help="Address of node 0 (spawn launcher)."),
    click.option("--master-port", type=int, default=None, help="Rendezvous port on node 0.  [default: a free port]"),
    click.option("--rdzv-endpoint", default=None, help="HOST:PORT rendezvous for multi-node torchrun."),
    click.option("--max-restarts", type=int, default=0, show_default=True, help="Restarts on failure (torchrun)."),
    click.option("--backend", default="auto", show_default=True, help="auto (nccl with one GPU per rank, else gloo), nccl or gloo."),
    click.option("--tracking", default="mlflow", show_default=True, help="Tracker: mlflow, or none to disable."),
    click.option("--tracking-uri", default=None, envvar="MLFLOW_TRACKING_URI",
                 help="MLflow store or server.  [default: sqlite:///mlflow.db here]"),
    click.option("--experiment", default="ddpx", show_default=True, help="MLflow experiment name."),
    click.option("--system-metrics/--no-system-metrics", default=True, show_default=True,
                 help="Record CPU, memory and GPU use with the run (MLflow system metrics, rank 0)."),
    click.option("--run-dir", default=None, help="Folder for run folders.  [default: ./ddpx-runs]"),
    click.option("--timeout", "timeout_s", type=float, default=1800.0, show_default=True,
                 help="Seconds a rank waits for the others in a collective before the job fails."),
    click.option("--partition", default=None, help="Slurm partition (--launcher slurm)."),
    click.option("--time", "time_limit", default=None, metavar="HH:MM:SS", help="Slurm time limit (--launcher slurm)."),
    click.option("--account", default=None, help="Slurm account (--launcher slurm)."),
    click.option("--sbatch-arg", "sbatch_args", multiple=True, metavar="ARG",
                 help="Extra #SBATCH line, e.g. --sbatch-arg=--qos=high (repeatable; --launcher slurm)."),
    click.option("--signal-seconds", type=int, default=90, show_default=True,
                 help="Slurm sends USR1 this long before the time limit: checkpoint and requeue (--launcher slurm)."),
    click.option("--wait", is_flag=True, help="Follow the Slurm job's log and exit with its status (--launcher slurm)."),
]

_SLURM_KEYS = ("partition", "time_limit", "account", "sbatch_args", "signal_seconds", "wait")


def launch_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the shared launch options to ``command``; it receives them as keyword arguments."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def options_from(values: dict[str, Any], *, resume: str | None = None, dry_run: bool = False) -> LaunchOptions:
    """Build :class:`LaunchOptions` from the keyword arguments :func:`launch_options` added."""
    slurm = {key: values[key] for key in _SLURM_KEYS}
    slurm["time"] = slurm.pop("time_limit")
    slurm["sbatch_args"] = list(slurm["sbatch_args"])
    slurm["dry_run"] = dry_run
    return LaunchOptions(
        launcher=values["launcher"], nproc=values["nproc"], nnodes=values["nnodes"], node_rank=values["node_rank"],
        master_addr=values["master_addr"], master_port=values["master_port"], rdzv_endpoint=values["rdzv_endpoint"],
        max_restarts=values["max_restarts"], backend=values["backend"], tracking=values["tracking"],
        tracking_uri=values["tracking_uri"], experiment=values["experiment"], run_dir=values["run_dir"],
        resume=resume, timeout_s=values["timeout_s"], system_metrics=values["system_metrics"], launcher_options=slurm,
    )
