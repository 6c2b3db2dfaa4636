"""One trial of a parallel sweep, in a process of its own: ``python -m ddpx.launch.trial_process JOB_FILE``.

The sweep prepares the trial's run folder and ``job.json``, then starts this process with the
trial's share of the machine in its environment (``DDPX_TRIAL_CPUS``: the cores it is pinned to;
``OMP_NUM_THREADS`` and ``CUDA_VISIBLE_DEVICES`` as its slot sets them). It launches the job as
``ddpx recipe`` would — its own signal handling, its own fork server, its own ports — and writes
``trial-outcome.json`` in the run folder: the status and, for a failure, the error and exit code.
"""

from __future__ import annotations

import os
import sys

OUTCOME_FILE = "trial-outcome.json"
CPUS_VARIABLE = "DDPX_TRIAL_CPUS"


def pin_to_cores() -> None:
    """Keep this process (and the ranks it starts) on the cores the sweep gave the trial."""
    cores = os.environ.pop(CPUS_VARIABLE, "")
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(core) for core in cores.split(",")})


def run_trial_job(job_file: str) -> int:
    """Launch the prepared job; record its outcome in its run folder and return the exit code."""
    from ddpx.contract.errors import JobFailed, StoppedOnRequest, UserError
    from ddpx.contract.job import Job
    from ddpx.launch.run import launch_job
    from ddpx.plugin_host.registry import load_registry
    from ddpx.records.atomic_save import write_json_atomically

    job = Job.load(job_file)
    outcome = {"status": "FINISHED", "exit_code": 0, "error": None}
    try:
        launch_job(load_registry(), job)
    except JobFailed as exc:  # a run stopped on request: where; how it goes on is the sweep's to say
        error = exc.where if isinstance(exc, StoppedOnRequest) else str(exc)
        outcome = {"status": "FAILED", "exit_code": exc.exit_code, "error": error}
    except UserError as exc:
        outcome = {"status": "FAILED", "exit_code": 2, "error": exc.message}
    except KeyboardInterrupt:
        outcome = {"status": "FAILED", "exit_code": 130, "error": "interrupted before its ranks started"}
    try:
        write_json_atomically(job.run_dir.path / OUTCOME_FILE, outcome)
    except OSError as exc:  # the sweep reads the status, and the paragraph in trial.log
        from ddpx.contract.disk_full import disk_full_error

        full = disk_full_error(exc, job.run_dir.path, "the trial's outcome")
        if full is None:
            raise
        print(f"Error: {full.message}", file=sys.stderr)
        return 1
    return int(outcome["exit_code"])


def main() -> None:
    pin_to_cores()
    print(
        f"ddpx: trial process {os.getpid()} on CPU core(s) {','.join(map(str, sorted(os.sched_getaffinity(0))))}"
        f"; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '-')}, CUDA_VISIBLE_DEVICES="
        f"{os.environ.get('CUDA_VISIBLE_DEVICES', '-')}",
        flush=True,
    )
    sys.exit(run_trial_job(sys.argv[1]))


if __name__ == "__main__":
    main()
