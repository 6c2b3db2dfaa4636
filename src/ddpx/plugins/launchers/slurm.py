"""The ``slurm`` launcher: submit the job with sbatch, or start the ranks with srun when already
inside an allocation (``salloc``, or an sbatch script of your own).

Submitting writes ``slurm.sbatch`` into the run folder (``--dry-run`` prints it and stops), then
prints the job id and the log; ``--wait`` follows the log and exits with the job's status. The
script asks for ``--signal=USR1@SECONDS`` and ``--requeue``: on USR1 every rank stops at a step
boundary, rank 0 checkpoints and requeues the job with ``scontrol requeue``, and the rerun
continues from that checkpoint in the same MLflow run.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

from ddpx.api import Job, LauncherSpec, LaunchOption, LaunchOutcome, UserError, hookimpl, run_supervised
from ddpx.plugins.launchers.slurm_script import sbatch_script

FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}


def inside_allocation() -> bool:
    return "SLURM_JOB_ID" in os.environ


def _not_installed(command: str) -> UserError:
    return UserError(
        f"--launcher slurm needs the Slurm commands (`{command}` is not installed here). Run on a "
        "Slurm login node, or use --launcher spawn or torchrun."
    )


def _slurm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(args), capture_output=True, text=True, check=check)
    except FileNotFoundError:
        raise _not_installed(args[0]) from None
    except subprocess.CalledProcessError as exc:
        raise UserError(f"`{' '.join(args)}` failed: {exc.stderr.strip() or exc.stdout.strip()}") from None


def submit(script) -> str:
    """Hand the script to sbatch; its job id. A refusal is a :class:`UserError` quoting sbatch."""
    try:
        result = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True)
    except FileNotFoundError:
        raise _not_installed("sbatch") from None
    if result.returncode != 0:
        why = " ".join((result.stderr.strip() or result.stdout.strip() or f"exit status {result.returncode}").split())
        raise UserError(
            f"Slurm refused the job, so nothing was submitted or recorded: {why}. Fix what sbatch names "
            "(--partition, --time, --account, an --sbatch-arg, or the --nnodes/--nproc the cluster can "
            "give) and run the command again; --dry-run prints the script sbatch is given."
        )
    return result.stdout.strip().split(";")[0]


def check(job: Job) -> None:
    """Before the run folder is made: the command this launch needs is installed."""
    if job.launch.launcher_options.get("dry_run"):
        return
    command = "srun" if inside_allocation() else "sbatch"
    if shutil.which(command) is None:
        raise _not_installed(command)


def job_state(job_id: str) -> tuple[str, int]:
    """(JobState, exit status) of a job, from ``scontrol show job``."""
    out = _slurm("scontrol", "show", "job", "-o", job_id, check=False).stdout
    state = re.search(r"JobState=(\S+)", out)
    code = re.search(r"ExitCode=(\d+):(\d+)", out)
    return (state.group(1) if state else "UNKNOWN"), (int(code.group(1)) if code else 1)


def follow(job_id: str, log_path, poll_s: float = 1.0) -> int:
    """Print the job's log as it grows until the job ends; return its exit status."""
    offset = 0
    while True:
        state, code = job_state(job_id)
        if log_path.exists():
            with log_path.open("r", encoding="utf-8", errors="replace") as fh:
                fh.seek(offset)
                chunk = fh.read()
                offset = fh.tell()
            if chunk:
                sys.stdout.write(chunk)
                sys.stdout.flush()
        if state in FINAL_STATES:
            return code if state == "COMPLETED" or code else 1
        time.sleep(poll_s)


def launch(job: Job) -> LaunchOutcome:
    options = job.launch.launcher_options
    if inside_allocation() and not options.get("dry_run"):
        return LaunchOutcome(run_inside_allocation(job))
    script = job.run_dir.path / "slurm.sbatch"
    script.write_text(sbatch_script(job), encoding="utf-8")
    if options.get("dry_run"):
        print(script.read_text(encoding="utf-8"), end="")
        print(f"# dry run: written to {script}; submit it with `sbatch {shlex.quote(str(script))}`")
        return LaunchOutcome(0, detached=True)
    job_id = submit(script)
    log = job.run_dir.path / f"slurm-{job_id}.out"
    (job.run_dir.path / "slurm-job-id").write_text(job_id, encoding="utf-8")
    print(f"ddpx: submitted Slurm job {job_id}; log: {log}")
    if not options.get("wait"):
        print(f"ddpx: follow it with `tail -f {log}`; the summary lands in {job.run_dir.summary_file}")
        return LaunchOutcome(0, detached=True)
    return LaunchOutcome(follow(job_id, log))


def run_inside_allocation(job: Job) -> int:
    """Inside ``salloc`` or an sbatch script: ``srun`` starts one task per rank."""
    settings = job.launch
    tasks = settings.nnodes * settings.nproc
    cmd = [
        "srun",
        f"--nodes={settings.nnodes}",
        f"--ntasks={tasks}",
        f"--ntasks-per-node={settings.nproc}",
        "--kill-on-bad-exit=1",
        sys.executable,
        "-m",
        "ddpx.plugins.launchers.slurm_task",
        str(job.run_dir.job_file),
    ]
    print(f"ddpx: inside Slurm allocation {os.environ['SLURM_JOB_ID']}: starting {tasks} rank(s) with srun")
    return run_supervised(cmd, stop_signal=signal.SIGTERM)  # srun passes SIGTERM on to every task


def detaches(job: Job) -> bool:
    """Submitting without --wait returns once sbatch accepted the job (a dry run submits nothing)."""
    options = job.launch.launcher_options
    return bool(options.get("dry_run")) or (not inside_allocation() and not options.get("wait"))


def submits() -> bool:
    """Outside an allocation the ranks run on compute nodes: this machine's GPUs do not matter."""
    return not inside_allocation()


OPTIONS = (
    LaunchOption("partition", "Slurm partition (--launcher slurm)."),
    LaunchOption("time", "Slurm time limit (--launcher slurm).", metavar="HH:MM:SS"),
    LaunchOption("account", "Slurm account (--launcher slurm)."),
    LaunchOption(
        "sbatch-arg",
        "Extra #SBATCH line, e.g. --sbatch-arg=--qos=high (repeatable; --launcher slurm).",
        multiple=True,
        metavar="ARG",
    ),
    LaunchOption(
        "signal-seconds",
        "Slurm sends USR1 this long before the time limit: checkpoint and requeue (--launcher slurm).  [default: 90]",
        kind=int,
        default=90,
    ),
    LaunchOption(
        "wait", "Follow the Slurm job's log and exit with its status (--launcher slurm).", flag=True, default=False
    ),
    LaunchOption("dry-run", "Print the sbatch script and submit nothing (--launcher slurm).", flag=True, default=False),
)


@hookimpl
def register_launchers(register):
    register(
        LauncherSpec(
            "slurm",
            "Slurm: sbatch (or srun inside an allocation), requeue on preemption",
            launch,
            submits=submits,
            detaches=detaches,
            options=OPTIONS,
            check=check,
        )
    )


@hookimpl
def ddpx_preempted(context):
    """Under Slurm, rank 0 requeues the job; the rerun continues from the checkpoint."""
    job_id = os.environ.get("SLURM_JOB_ID")
    if not job_id:
        return
    for sig in (signal.SIGTERM, signal.SIGINT):  # the requeue ends this run; it is already checkpointed
        signal.signal(sig, signal.SIG_IGN)
    if context.rank == 0:
        subprocess.run(["scontrol", "requeue", job_id], check=False, capture_output=True)
        subprocess.run(["scontrol", "update", f"jobid={job_id}", "StartTime=now"], check=False, capture_output=True)
