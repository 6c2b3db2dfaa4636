"""The parent side of a run: check everything, write the job, launch, report.

Everything that can be checked before a process starts is checked here (launcher, backend,
precision, tracker, rank layout), so user mistakes are exit code 2 with nothing started. Then
the run folder gets ``job.json`` and ``recipe.toml``, the launcher starts the ranks (rank 0
opens the tracking run), and the outcome is read back from the run folder: ``summary.json`` on success, the first rank's
failure otherwise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddpx.core.errors import JobFailed, UserError
from ddpx.core.failures import clear_failures, job_failure
from ddpx.core.gpus import local_gpu_count
from ddpx.core.job import Job
from ddpx.core.recipes import Recipe
from ddpx.core.registry import Registry
from ddpx.core.run_dir import RunDir
from ddpx.core.tracking import close_tracking_run


@dataclass(frozen=True)
class LaunchOptions:
    """How the user asked to run a recipe (the ``ddpx recipe`` options)."""

    launcher: str = "spawn"
    nproc: int | None = None
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int | None = None
    rdzv_endpoint: str | None = None
    max_restarts: int = 0
    backend: str = "auto"
    tracking: str = "mlflow"
    tracking_uri: str | None = None
    experiment: str = "ddpx"
    run_dir: str | None = None
    resume: str | None = None  # "auto" or a checkpoint path
    timeout_s: float = 1800.0
    system_metrics: bool = True
    launcher_options: dict[str, Any] = field(default_factory=dict)  # a launcher's own settings (Slurm's)


def default_nproc(gpus: int) -> int:
    """One rank per GPU, or 2 ranks on a machine without one."""
    return gpus if gpus > 0 else 2


def plan_job(registry: Registry, recipe: Recipe, options: LaunchOptions) -> Job:
    """Check the launch options against the plugins and this machine; nothing is started."""
    launcher = registry.get("launchers", options.launcher, key="--launcher")
    registry.get("trackers", options.tracking, key="--tracking")
    if options.nproc is not None and options.nproc < 1:
        raise UserError(f"--nproc must be at least 1, not {options.nproc}.")
    if options.nnodes < 1:
        raise UserError(f"--nnodes must be at least 1, not {options.nnodes}.")
    if not 0 <= options.node_rank < options.nnodes:
        raise UserError(f"--node-rank must be between 0 and {options.nnodes - 1} for --nnodes {options.nnodes}, not {options.node_rank}.")
    if options.max_restarts < 0:
        raise UserError(f"--max-restarts must be 0 or more, not {options.max_restarts}.")
    if options.timeout_s <= 0:
        raise UserError(f"--timeout must be a positive number of seconds, not {options.timeout_s}.")
    resume_from = None
    if options.resume and options.resume != "auto":
        from ddpx.core.checkpoint import load_checkpoint
        from ddpx.core.resume import check_resumable

        # a missing, unreadable or foreign checkpoint is an error now, not in every rank
        check_resumable(load_checkpoint(options.resume), options.resume, recipe.config)
        resume_from = str(Path(options.resume).resolve())
    if recipe.train["init_from"]:
        from ddpx.core.checkpoint import load_checkpoint

        load_checkpoint(recipe.train["init_from"])  # safe to read, before any rank tries

    gpus = local_gpu_count()
    nproc = options.nproc if options.nproc is not None else default_nproc(gpus)
    backend_name = options.backend
    if backend_name == "auto":
        backend_name = registry.pm.hook.ddpx_resolve_backend(nproc_per_node=nproc, gpus=gpus) or "gloo"
    backend = registry.get("backends", backend_name, key="--backend")
    remote = launcher.submits is not None and launcher.submits()
    reason = None if remote else backend.unusable_reason(nproc)
    if reason:
        raise UserError(f"--backend {backend_name} cannot run here: {reason}")
    if recipe.train["precision"] == "fp16" and backend.device_type != "cuda":
        raise UserError(
            "train.precision=fp16 needs a GPU (it relies on CUDA gradient scaling). On CPU use "
            "train.precision=bf16 or fp32."
        )

    job = Job(
        recipe_name=recipe.name,
        recipe_source=recipe.source,
        config=recipe.config,
        run_dir="",
        launcher=options.launcher,
        backend=backend_name,
        nproc_per_node=nproc,
        nnodes=options.nnodes,
        node_rank=options.node_rank,
        master_addr=options.master_addr,
        master_port=options.master_port,
        rdzv_endpoint=options.rdzv_endpoint,
        max_restarts=options.max_restarts,
        tracking=options.tracking,
        tracking_uri=options.tracking_uri,
        experiment=options.experiment,
        resume_from=resume_from,
        timeout_s=options.timeout_s,
        launcher_options=dict(options.launcher_options),
        system_metrics=options.system_metrics,
    )
    if launcher.check is not None:
        launcher.check(job)
    wrapper = registry.get("wrappers", recipe.train["wrapper"], key="train.wrapper")
    if wrapper.check is not None:
        wrapper.check(job)
    if recipe.task.check is not None:
        _call_task_check(recipe.task.check, recipe.config["dataset"], job.world_size)
    if options.master_port is not None and options.node_rank == 0 and not remote:
        check_port_free(options.master_addr, options.master_port)
    return job


def _call_task_check(check, params, world_size: int) -> None:
    import inspect

    try:
        takes_world_size = len(inspect.signature(check).parameters) >= 2
    except (TypeError, ValueError):
        takes_world_size = False
    if takes_world_size:
        check(params, world_size)
    else:
        check(params)


def check_port_free(host: str, port: int) -> None:
    """A rendezvous port that another program holds is a usage error before anything starts."""
    import errno
    import socket

    if not 0 < port < 65536:
        raise UserError(f"--master-port must be between 1 and 65535, not {port}.")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:  # not an address of this machine: another node's, for multi-node
                return
            raise UserError(f"--master-port {port} on {host} is already in use by another program ({exc.strerror}). "
                            "Choose another port, or leave --master-port out to let ddpx pick a free one.") from None


def prepare_run_dir(recipe: Recipe, job: Job, run_dir_base: str | None, resume: str | None) -> RunDir:
    """A new run folder, or with ``--resume auto`` the latest one of this recipe (continued in place)."""
    if resume == "auto":
        from ddpx.core.resume import latest_run_dir

        latest = latest_run_dir(recipe.name, run_dir_base)
        if latest is not None:
            for stale in (latest.summary_file, latest.stopped_file):
                stale.unlink(missing_ok=True)
            clear_failures(latest)
            print(f"ddpx: resuming the run in {latest.root}")
            return latest
        print(f"ddpx: no earlier run of {recipe.name} with a checkpoint; starting a new one")
    paths = RunDir.create(recipe.name, run_dir_base)
    paths.recipe_file.write_text(recipe.to_toml(), encoding="utf-8")
    return paths


def run_job(registry: Registry, recipe: Recipe, job: Job, run_dir_base: str | None = None,
            resume: str | None = None) -> dict[str, Any] | None:
    """Create (or pick) the run folder, start the ranks, and return rank 0's summary (or raise).

    On a machine whose ranks all succeeded but which did not hold global rank 0 (multi-node),
    there is no summary here: ``None``.
    """
    paths = prepare_run_dir(recipe, job, run_dir_base, resume)
    job.run_dir = str(paths.root)
    job.save()
    launcher = registry.get("launchers", job.launcher)
    try:
        status = launcher.launch(job)
    except UserError as exc:
        close_tracking_run(registry, job, "FAILED", exc.message)
        raise
    if paths.stopped_file.is_file() and not paths.summary_file.is_file():
        reason = json.loads(paths.stopped_file.read_text(encoding="utf-8"))["reason"]
        raise JobFailed(f"the run {reason}. Continue it with `ddpx recipe {recipe.requested} --resume auto`.", 75)
    if status == 130:
        close_tracking_run(registry, job, "KILLED", "interrupted (Ctrl-C); every rank was stopped")
        raise JobFailed(f"interrupted; every rank was stopped. The run folder is {paths.root}; continue with "
                        f"`ddpx recipe {recipe.requested} --resume auto`.", 130)
    if status == 0 and (job.nnodes > 1 or job.launcher_options.get("detached")) and not paths.summary_file.is_file():
        return None  # another machine holds global rank 0, or the job was handed to a batch system
    if status != 0 or not paths.summary_file.is_file():
        failure = job_failure(
            paths,
            status,
            f"the job exited with status {status} and no rank recorded an error; see {paths.root}"
            + (f" and {paths.launcher_log}" if paths.launcher_log.is_file() else ""),
        )
        close_tracking_run(registry, job, "FAILED", str(failure))
        raise failure
    summary = json.loads(paths.summary_file.read_text(encoding="utf-8"))
    summary["run_dir"] = str(paths.root)
    return summary
