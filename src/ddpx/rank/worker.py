"""The SPMD worker: the one program every rank runs, however it was started.

Launchers call :func:`run_rank` in each process they start (the ``spawn`` launcher), or run
``python -m ddpx.rank.worker JOB_FILE`` (``torchrun``, ``srun``). Each rank reads the job,
loads the plugins, joins the process group from its environment, runs :func:`ddpx.rank.fit.fit`
and leaves the group on every exit path. Rank 0 alone prints and talks to the tracker. A rank
that fails records its failure in the run folder (see :mod:`ddpx.records.failures`) and exits 1.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import sys
import warnings
from pathlib import Path

from ddpx.contract.disk_full import RESUME_FIX, disk_full_cause, disk_full_error
from ddpx.contract.job import Job
from ddpx.records.failures import record_failure

WORKER_MODULE = "ddpx.rank.worker"


def _limit_threads(job: Job) -> None:
    """Share the CPU cores between the local ranks unless the user chose a thread count."""
    if "OMP_NUM_THREADS" in os.environ:
        return
    import torch

    from ddpx.contract.cpu_threads import cpu_share

    torch.set_num_threads(cpu_share(int(os.environ.get("LOCAL_WORLD_SIZE", job.launch.nproc))))


def run_rank(job_file: str) -> None:
    """Run this process's rank of the job in ``job_file``; exit 1 on failure, 75 when preempted,
    130 when interrupted."""
    from ddpx.rank.signals import Preempted, note_early_request, quiet_stops, raise_terminated

    job = Job.load(job_file)
    rank = int(os.environ.get("RANK", "0"))
    signal.signal(signal.SIGTERM, raise_terminated)  # a launcher stopping the ranks: a clean, recorded stop
    # the launchers stop ranks with SIGINT: heard even where it was inherited ignored (a job started in the
    # background of a script)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGUSR1, note_early_request)  # a stop request before training: honoured when it starts
    sys.unraisablehook = quiet_stops
    if rank != 0:
        warnings.simplefilter("ignore")
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the rest of the process
    try:
        _run(job)
    except Preempted as exc:
        if rank == 0:
            try:
                job.run_dir.stopped_file.write_text(json.dumps({"reason": str(exc)}), encoding="utf-8")
            except OSError as error:  # a full disk: the stop is recorded as its failure
                record_failure(job.run_dir, rank, disk_full_failure(error, job) or error)
                raise SystemExit(1) from None
        raise SystemExit(Preempted.exit_code) from None
    except BaseException as exc:
        record_failure(job.run_dir, rank, disk_full_failure(exc, job) or exc)
        raise SystemExit(130 if isinstance(exc, KeyboardInterrupt) else 1) from None


def disk_full_failure(exc: BaseException, job: Job) -> Exception | None:
    """A failure a full disk caused, wherever the write was, as the paragraph naming disk and folder."""
    cause = disk_full_cause(exc)
    if cause is None:
        return None
    filename = getattr(cause, "filename", None)
    failed = Path(os.fsdecode(filename)) if filename else job.run_dir.path
    in_run_dir = job.run_dir.path in [failed, *failed.parents]
    full = disk_full_error(
        exc,
        job.run_dir.path,
        "a file of the run" if in_run_dir else "a file",
        RESUME_FIX if in_run_dir else "Free space there.",
    )
    full.__cause__ = exc  # failures/rank-N.json keeps where it happened; the user sees the paragraph
    return full


def _run(job: Job) -> None:
    from ddpx.plugin_host.registry import load_registry
    from ddpx.rank.distributed import RankEnv, device_for, process_group
    from ddpx.rank.progress import RankConsole
    from ddpx.rank.resume import load_resume_state
    from ddpx.rank.stall import BEACON, watching_for_stalls

    env = RankEnv.from_environ()
    _limit_threads(job)
    console = RankConsole(env.rank)
    registry = load_registry()
    backend = registry.get("backends", job.launch.backend)
    device = device_for(backend.device_type, env.local_rank)
    report = (lambda text: console.print(f"ddpx: {text}", markup=False, style="yellow")) if env.is_main else None
    with watching_for_stalls(job.run_dir.path, env.rank, job.launch.stall_report_s, report):
        BEACON.at("joining the process group")
        with process_group(backend.name, env, device, timeout_s=job.launch.timeout_s):
            BEACON.at("reading the checkpoint to continue from")
            resume = load_resume_state(job, registry.get("wrappers", job.config["train"]["wrapper"]).sharded)
            BEACON.at("starting the tracking run")
            tracker = _start_tracker(job, registry, env, device, console, resume) if env.is_main else None
            if env.is_main:
                _import_metric_modules(job, registry)
            gc.freeze()  # what is loaded by now lives as long as the rank: later collections skip it
            _fit_and_record(job, registry, env, device, console, tracker, resume)


def _fit_and_record(job, registry, env, device, console, tracker, resume) -> None:
    """Train; rank 0 closes the tracking run and writes ``summary.json``."""
    from ddpx.rank.fit import fit
    from ddpx.rank.signals import Preempted

    try:
        summary = fit(job, registry, env, device, console, tracker, resume)
    except Preempted:
        raise  # the run goes on when started again: its tracking run stays open
    except BaseException as exc:
        if tracker:
            tracker.finish(
                "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED", error=f"{type(exc).__name__}: {exc}"
            )
        raise
    if not env.is_main:
        return
    summary.run_id = tracker.run_id if tracker else None
    summary.tracker_hint = tracker.describe() if tracker else None
    if tracker:
        from ddpx.records.tracking import record_result

        record_result(tracker, job, registry, summary)
        summary.tracking_error = tracker.error
    summary.write(job.run_dir.summary_file)


def _import_metric_modules(job: Job, registry) -> None:
    """Rank 0 computes the dev metric after every epoch: it imports what the metric needs now,
    not between the first and second epochs while the other ranks wait for it."""
    metric = registry.get("metrics", registry.task_of(job.config).metric)
    for module in metric.imports:
        importlib.import_module(module)


def _start_tracker(job, registry, env, device, console, resume):
    """Rank 0 opens the job's tracking run (with the world size it started on: an elastic job's
    may be below its most), or continues the run of the checkpoint it resumes, and tags it with
    the arithmetic it runs on (torch, CPU kernels, threads, GPU)."""
    from ddpx.rank.distributed import arithmetic_tags
    from ddpx.records.tracking import start_job_run

    warn = lambda text: console.print(f"[yellow]warning:[/yellow] {text}")  # noqa: E731
    tracker = start_job_run(
        registry,
        job,
        device.type,
        warn,
        resume_run_id=resume.get("tracking_run_id") if resume else None,
        world_size=env.world_size,
    )
    tracker.set_tags(arithmetic_tags(device))  # a resumed run: where it goes on
    return tracker


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: python -m {WORKER_MODULE} JOB_FILE  (started by a ddpx launcher)", file=sys.stderr)
        raise SystemExit(2)
    run_rank(args[0])


if __name__ == "__main__":
    main()
