"""The SPMD worker: the one program every rank runs, however it was started.

Launchers call :func:`run_rank` in each process they start (the ``spawn`` launcher), or run
``python -m ddpx.rank.worker JOB_FILE`` (``torchrun``, ``srun``). Each rank reads the job,
loads the plugins, joins the process group from its environment, builds its run's context once
(:class:`ddpx.rank.run_context.RunContext`), runs :func:`ddpx.rank.loop.fit.fit` with it, and
leaves the group on every exit path. Rank 0 alone prints and talks to the tracker. A rank that
fails records its failure in the run folder (see :mod:`ddpx.records.failures`) and exits 1.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ddpx.contract.disk_full import RESUME_FIX, disk_full_cause, disk_full_error
from ddpx.contract.job import Job
from ddpx.records.failures import record_failure

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.rank.run_context import RunContext

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
    from ddpx.rank.process_group.signals import Preempted, note_early_request, quiet_stops, raise_terminated

    job = Job.load(job_file)
    rank = int(os.environ.get("RANK", "0"))
    signal.signal(signal.SIGTERM, raise_terminated)  # a launcher stopping the ranks: a clean, recorded stop
    # the launchers stop ranks with SIGINT: heard even where it was inherited ignored (a job started in the
    # background of a script)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGUSR1, note_early_request)  # a stop request before training: honoured when it starts
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})  # held until now in a rank forked by spawn
    sys.unraisablehook = quiet_stops
    if rank != 0:
        warnings.simplefilter("ignore")
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the rest of the process
    try:
        _run(job)
    except Preempted as exc:
        _ending()
        if rank == 0:
            try:
                job.run_dir.stopped_file.write_text(json.dumps({"reason": str(exc)}), encoding="utf-8")
            except OSError as error:  # a full disk: the stop is recorded as its failure
                record_failure(job.run_dir, rank, disk_full_failure(error, job) or error)
                raise SystemExit(1) from None
        raise SystemExit(Preempted.exit_code) from None
    except BaseException as exc:
        _ending()
        record_failure(job.run_dir, rank, disk_full_failure(exc, job) or exc)
        raise SystemExit(130 if isinstance(exc, KeyboardInterrupt) else 1) from None


def _ending() -> None:
    """The rank is ending: a stop repeated while it records why (a launcher's second SIGTERM to a slow
    rank) must not break off that record with a second traceback."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


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
    """Join the world (stall watcher, process group), build the run's context once, and run it."""
    from ddpx.plugin_host.registry import load_registry
    from ddpx.rank.diagnostics.progress import RankConsole
    from ddpx.rank.diagnostics.stall import BEACON, watching_for_stalls
    from ddpx.rank.process_group.distributed import RankEnv, device_for, process_group
    from ddpx.rank.run_context import RunContext

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
            run = RunContext.open(job, registry, env, device, console)
            gc.freeze()  # what is loaded by now lives as long as the rank: later collections skip it
            _fit_and_record(run)


def _fit_and_record(run: RunContext) -> None:
    """Train; rank 0 closes the tracking run and writes ``summary.json``."""
    from ddpx.rank.loop.fit import fit
    from ddpx.rank.process_group.signals import Preempted

    try:
        summary = fit(run)
    except Preempted:
        raise  # the run goes on when started again: its tracking run stays open
    except BaseException as exc:
        run.failed(exc)
        raise
    if run.env.is_main:
        run.record_result(summary)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(f"usage: python -m {WORKER_MODULE} JOB_FILE  (started by a ddpx launcher)", file=sys.stderr)
        raise SystemExit(2)
    run_rank(args[0])


if __name__ == "__main__":
    main()
