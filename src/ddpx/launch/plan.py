"""Planning a job: everything that can be checked before a process starts, so a user mistake is
exit code 2 with nothing started — the launcher and its options, the rank layout, the backend
on this machine, the precision, checkpoints to continue from, the task's own checks, the port.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ddpx.config.global_batch import per_rank_batch
from ddpx.config.recipe import Recipe
from ddpx.contract.errors import UserError
from ddpx.contract.job import Job
from ddpx.contract.launch_settings import LaunchSettings, default_nproc
from ddpx.contract.run_dir import latest_run_dir
from ddpx.contract.specs import LauncherSpec
from ddpx.launch.gpus import local_gpu_count
from ddpx.plugin_host.registry import Registry

# rank 0 draws the held-out figures as every job ends (records/report_files.py: new_figure)
FIGURE_IMPORTS = ("matplotlib.figure", "matplotlib.backends.backend_agg")


def plan_job(registry: Registry, recipe: Recipe, settings: LaunchSettings) -> Job:
    """Check the settings against the plugins and this machine and return the job; nothing is started."""
    launcher = registry.get("launchers", settings.launcher, key="--launcher")
    tracker = registry.get("trackers", settings.tracking, key="--tracking")
    check_rank_layout(settings)
    if settings.elastic and not launcher.elastic:
        raise UserError(
            f"--nnodes {settings.node_range} is a range of machines, which only a launcher that re-forms "
            f"the job as machines leave or join can run (--launcher torchrun); --launcher "
            f"{launcher.name} needs one number, such as --nnodes {settings.nnodes}."
        )
    sharded = registry.get("wrappers", recipe.train["wrapper"], key="train.wrapper").sharded
    if sharded and settings.elastic:
        raise UserError(
            f"--nnodes {settings.node_range} continues after a change from rank 0's run folder, but "
            f"train.wrapper={recipe.train['wrapper']} writes each machine's shards in its own: use "
            "train.wrapper=ddp for an elastic job, or a fixed --nnodes."
        )
    check_encoder_start(recipe, settings)
    resume_from = check_checkpoints(recipe, settings.resume, sharded)
    resolved = resolve_for_this_machine(registry, recipe, settings, launcher)
    # this world's share of a global batch: the run folder's recipe, the job and the checkpoints agree on it
    recipe.train["batch_size"] = per_rank_batch(recipe.train, resolved.world_size, settings.elastic)
    job = Job(
        recipe_name=recipe.name,
        recipe_source=recipe.source,
        config=recipe.config,
        launch=resolved,
        requested=recipe.requested,
        resume_from=resume_from,
    )
    job.imports = job_imports(registry, recipe, tracker, job)
    if launcher.check is not None:
        launcher.check(job)
    wrapper = registry.get("wrappers", recipe.train["wrapper"], key="train.wrapper")
    if wrapper.check is not None:
        wrapper.check(job)
    check_schedule(registry, recipe.train)
    check_ensemble(recipe)
    if recipe.model.check is not None:
        recipe.model.check({k: v for k, v in recipe.config["model"].items() if k != "name"})
    if recipe.task.check is not None:
        call_task_check(recipe.task.check, recipe.config["dataset"], job.world_size, recipe.model.inputs)
    if recipe.task.train_samples is not None:
        check_batch_fits(
            recipe.task.train_samples(recipe.config["dataset"]), recipe.train["batch_size"], job.world_size
        )
    if tracker.check is not None:
        tracker.check(job)
    if settings.master_port is not None and settings.node_rank == 0 and not submits(launcher):
        check_port_free(settings.master_addr, settings.master_port)
    return job


def job_imports(registry: Registry, recipe: Recipe, tracker, job: Job) -> list[str]:
    """The slow modules the ranks will import, which a launcher that forks them imports once, ahead: the
    tracker's (and its store's), the metrics' (the task's and the held-out ones beside it), the model's, the task's,
    the figures'."""
    metrics = [registry.get("metrics", name) for name in (recipe.task.metric, *recipe.task.heldout_metrics)]
    store = tracker.imports_for(job) if tracker.imports_for is not None else ()
    return [
        *(m for spec in (tracker, *metrics, recipe.model, recipe.task) for m in spec.imports),
        *store,
        *FIGURE_IMPORTS,
    ]


def check_rank_layout(settings: LaunchSettings) -> None:
    if settings.nproc is not None and settings.nproc < 1:
        raise UserError(f"--nproc must be at least 1, not {settings.nproc}.")
    if settings.nnodes < 1 or (settings.min_nodes is not None and not 1 <= settings.min_nodes <= settings.nnodes):
        raise UserError(
            f"--nnodes must be at least 1, and a range MIN:MAX needs 1 <= MIN <= MAX, not {settings.node_range}."
        )
    if not 0 <= settings.node_rank < settings.nnodes:
        raise UserError(
            f"--node-rank must be between 0 and {settings.nnodes - 1} for --nnodes {settings.nnodes}, "
            f"not {settings.node_rank}."
        )
    if settings.max_restarts < 0:
        raise UserError(f"--max-restarts must be 0 or more, not {settings.max_restarts}.")
    if not 0 < settings.timeout_s < float("inf"):  # NaN fails both comparisons
        raise UserError(f"--timeout must be a positive, finite number of seconds, not {settings.timeout_s}.")
    if not 0 <= settings.stall_report_s < float("inf"):
        raise UserError(
            f"--stall-report must be 0 (never) or a finite number of seconds, not {settings.stall_report_s}."
        )


def check_schedule(registry: Registry, train: Mapping[str, Any]) -> None:
    """One warm-up key at a time, and the schedule's own check."""
    if train["warmup_steps"] and train["warmup_fraction"]:
        raise UserError(
            f"train.warmup_steps={train['warmup_steps']} and train.warmup_fraction="
            f"{train['warmup_fraction']} both set the warm-up; keep one and set the other to 0."
        )
    schedule = registry.get("schedules", train["lr_schedule"], key="train.lr_schedule")
    if schedule.check is not None:
        schedule.check(train)


def check_ensemble(recipe: Recipe) -> None:
    """An ensemble's members are combined by their task's loss; one it cannot combine is refused now,
    not after every member has trained."""
    from ddpx.records.ensemble_columns import COMBINED

    if recipe.train["ensemble_size"] > 1 and recipe.task.loss not in COMBINED:
        raise UserError(
            f"train.ensemble_size={recipe.train['ensemble_size']} averages its members' answers, which it can do "
            f"for the losses {', '.join(COMBINED)}; task '{recipe.task.name}' trains with '{recipe.task.loss}'. "
            "Set train.ensemble_size=1."
        )


def check_checkpoints(recipe: Recipe, resume: str | None, sharded: bool) -> str | None:
    """A ``--resume PATH`` or ``train.init_from`` that cannot be read (or does not fit) is an error
    now, not on every rank; returns the checkpoint a first start continues from."""
    resume_from = None
    if resume and resume != "auto":
        from ddpx.records.checkpoint_file import check_resumable, load_checkpoint

        check_resumable(load_checkpoint(resume), resume, recipe.config, sharded)
        resume_from = str(Path(resume).resolve())
    if recipe.train["init_from"]:
        from ddpx.records.checkpoint_file import check_init_fits, load_checkpoint

        check_init_fits(load_checkpoint(recipe.train["init_from"]), recipe.train["init_from"], recipe.config)
    return resume_from


def check_encoder_start(recipe: Recipe, settings: LaunchSettings) -> None:
    """Pretrained weights for the model's encoder (``ModelSpec.encoder``) are read now, so a source
    that is missing or made for another model is an error before any rank starts; and
    ``train.freeze_encoder_epochs`` needs an encoder that starts from trained weights."""
    encoder, train = recipe.model.encoder, recipe.train
    frozen, init_from = train["freeze_encoder_epochs"], train["init_from"]
    if encoder is None:
        if frozen:
            raise UserError(
                f"train.freeze_encoder_epochs={frozen} freezes the model's encoder, and model {recipe.model.name} "
                "has none. Set train.freeze_encoder_epochs=0, or use a model with an encoder (model.name=dmpnn)."
            )
        return
    params = {k: v for k, v in recipe.config["model"].items() if k != "name"}
    source = params.get(encoder.key, "") if encoder.key else ""
    if source and init_from:
        raise UserError(
            f"model.{encoder.key}={source} starts the encoder and train.init_from={init_from} starts every "
            f"weight of the model: keep one (train.init_from='' to fine-tune from the pretrained encoder)."
        )
    if frozen and not source and not init_from:
        key = f"model.{encoder.key}=..." if encoder.key else "train.init_from=CHECKPOINT"
        raise UserError(
            f"train.freeze_encoder_epochs={frozen} keeps the encoder as it starts, and this run's encoder "
            f"starts from random weights. Give it pretrained ones ({key}), or set train.freeze_encoder_epochs=0."
        )
    resumes = settings.resume not in (None, "", "auto") or (
        settings.resume == "auto" and latest_run_dir(recipe.name, settings.runs_dir) is not None
    )
    if source and encoder.load is not None and not resumes:  # a run that continues reads no source
        encoder.load(params, settings.tracking_uri)  # a UserError when it cannot start this model


def submits(launcher: LauncherSpec) -> bool:
    """True when the launcher's ranks run on other machines (a batch system)."""
    return launcher.submits is not None and launcher.submits()


def resolve_for_this_machine(
    registry: Registry, recipe: Recipe, settings: LaunchSettings, launcher: LauncherSpec
) -> LaunchSettings:
    """The settings with ``nproc`` and ``backend`` chosen for this machine's GPUs (checked), and
    the experiment named after the recipe unless the user named one."""
    gpus = local_gpu_count()
    nproc = settings.nproc if settings.nproc is not None else default_nproc(gpus)
    backend_name = settings.backend
    if backend_name == "auto":
        backend_name = registry.pm.hook.ddpx_resolve_backend(nproc_per_node=nproc, gpus=gpus) or "gloo"
    backend = registry.get("backends", backend_name, key="--backend")
    reason = None if submits(launcher) else backend.unusable_reason(nproc)
    if reason:
        raise UserError(f"--backend {backend_name} cannot run here: {reason}")
    if not submits(launcher) and backend.device_type == "cpu":
        warn_if_oversubscribed(nproc)
    if recipe.train["precision"] == "fp16" and backend.device_type != "cuda":
        raise UserError(
            "train.precision=fp16 needs a GPU (it relies on CUDA gradient scaling). On CPU use "
            "train.precision=bf16 or fp32."
        )
    return replace(
        settings,
        nproc=nproc,
        backend=backend_name,
        experiment=settings.experiment or recipe.name,
        launcher_options=dict(settings.launcher_options),
    )


def check_batch_fits(samples: int | None, batch_size: int, world_size: int) -> None:
    """A batch larger than each rank's share of the training split never fills."""
    if samples is None:
        return
    share = -(-samples // world_size)
    if batch_size > share:
        raise UserError(
            f"train.batch_size={batch_size} is larger than each rank's share of the training split "
            f"({samples} samples over {world_size} rank(s): {share}), so no batch would ever be full. "
            f"Use train.batch_size={min(share, batch_size)} or less, fewer ranks, or more data."
        )


OVERSUBSCRIBED = 2  # ranks per core beyond which a CPU job is mostly waiting for cores


def warn_if_oversubscribed(nproc: int) -> None:
    """Many more CPU ranks than cores run, but slowly: say so before they start."""
    import os
    import sys

    cores = os.cpu_count() or 1
    if nproc > OVERSUBSCRIBED * cores:
        print(
            f"ddpx: warning: --nproc {nproc} starts {nproc} ranks on this machine's {cores} CPU core(s); they take "
            f"turns on the cores and the job runs slower than with --nproc {cores}.",
            file=sys.stderr,
        )


def call_task_check(check: Callable[..., None], params: Mapping[str, Any], world_size: int, inputs: str = "") -> None:
    """A task's ``check(params)``, ``check(params, world_size)`` when it takes the rank count, or
    ``check(params, world_size, inputs)`` when it also takes the model's input form."""
    try:
        arity = len(inspect.signature(check).parameters)
    except (TypeError, ValueError):
        arity = 1
    if arity >= 3:
        check(params, world_size, inputs)
    elif arity == 2:
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
            raise UserError(
                f"--master-port {port} on {host} is already in use by another program ({exc.strerror}). "
                "Choose another port, or leave --master-port out to let ddpx pick a free one."
            ) from None
