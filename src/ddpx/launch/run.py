"""Running a planned job: create (or pick) its run folder, write ``job.json`` and ``recipe.toml``,
hand the job to its launcher, and read the outcome back from the run folder — rank 0's
``summary.json`` on success, the first rank's failure otherwise (the tracking run marked too).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ddpx.config.recipe import Recipe
from ddpx.contract.disk_full import RESUME_FIX, disk_full_error, disk_full_message
from ddpx.contract.errors import JobFailed, StoppedOnRequest, UserError
from ddpx.contract.job import Job
from ddpx.contract.records import RunSummary
from ddpx.contract.run_dir import DEFAULT_ROOT, RunDir, latest_run_dir
from ddpx.contract.specs import LaunchOutcome
from ddpx.launch.signals import signals_reach_the_ranks
from ddpx.plugin_host.registry import Registry
from ddpx.records.failures import clear_failures, job_failure
from ddpx.records.stalls import clear_stalls, describe_stalls, read_stalls
from ddpx.records.tracking import close_tracking_run


def prepare_run_dir(recipe: Recipe, job: Job) -> RunDir:
    """The job's run folder: the one its caller chose (a study's: new, or one it continues), or a new
    one, or with ``--resume auto`` the latest one of this recipe. A folder that holds a checkpoint is
    continued in place."""
    if job.run_dir is not None:
        return continue_in_place(job.run_dir, recipe) if job.run_dir.last_checkpoint.is_file() else job.run_dir
    if job.launch.resume == "auto":
        latest = latest_run_dir(recipe.name, job.launch.runs_dir)
        if latest is not None:
            return continue_in_place(latest, recipe)
        print(f"ddpx: no earlier run of {recipe.name} with a checkpoint; starting a new one")
    return new_run_dir(recipe, job.launch.runs_dir)


def new_run_dir(recipe: Recipe, runs_dir: str | None) -> RunDir:
    """A new run folder for ``recipe``, its resolved ``recipe.toml`` written."""
    run_dir = RunDir.create(recipe.name, runs_dir)
    try:
        run_dir.recipe_file.write_text(recipe.to_toml(), encoding="utf-8")
    except OSError:
        run_dir.discard()
        raise
    return run_dir


def continue_in_place(run_dir: RunDir, recipe: Recipe) -> RunDir:
    """An earlier run's folder, made ready to go on from its last checkpoint (the ranks load it)."""
    check_continuable(run_dir, recipe)
    for stale in (run_dir.summary_file, run_dir.stopped_file):
        stale.unlink(missing_ok=True)
    clear_failures(run_dir)
    clear_stalls(run_dir.path)
    print(f"ddpx: resuming the run in {run_dir.path}")
    return run_dir


def check_continuable(run_dir: RunDir, recipe: Recipe) -> None:
    """``--resume auto``: the latest run's checkpoint must be one this recipe can continue —
    checked here, before launch, not on every rank."""
    from ddpx.records.checkpoint_file import check_resumable, load_checkpoint

    if run_dir.last_checkpoint.is_file():
        check_resumable(load_checkpoint(run_dir.last_checkpoint), run_dir.last_checkpoint, recipe.config)


def run_job(registry: Registry, recipe: Recipe, job: Job) -> RunSummary | None:
    """Start the ranks and return rank 0's summary (or raise :class:`JobFailed`).

    ``None`` when this machine's ranks all succeeded but global rank 0 ran elsewhere (multi-node),
    or when the launcher handed the job to a batch system and returned.
    """
    prepare_job(registry, recipe, job)
    try:
        return launch_job(registry, job)
    except UserError:  # the launcher refused the job (sbatch, say): a usage error leaves nothing behind
        discard_unstarted(job.run_dir)
        raise
    except OSError as exc:  # a full disk before the ranks wrote anything (the launcher's own files)
        full = disk_full_error(
            exc,
            job.run_dir.path,
            "the launcher's files",
            "Free space there, or give --run-dir a folder on a larger disk.",
        )
        if full is None:
            raise
        discard_unstarted(job.run_dir)
        raise full from None


def prepare_job(registry: Registry, recipe: Recipe, job: Job) -> None:
    """The job's run folder, with ``job.json`` written, and its tracking store ready; a full disk
    is a :class:`UserError` naming it, and leaves no half-made run folder."""
    try:
        job.run_dir = prepare_run_dir(recipe, job)
        job.save()
        tracker = registry.get("trackers", job.launch.tracking)
        if tracker.prepare is not None and job.launch.node_rank == 0:
            tracker.prepare(job)
    except Exception as exc:
        folder = job.run_dir.path if job.run_dir else Path(job.launch.runs_dir or DEFAULT_ROOT)
        full = disk_full_error(
            exc, folder, "the job's definition", "Free space there, or give --run-dir a folder on a larger disk."
        )
        if full is None:
            raise
        if job.run_dir is not None:
            discard_unstarted(job.run_dir)
        raise full from None


def discard_unstarted(run_dir: RunDir) -> None:
    """Remove a run folder no rank wrote into (a resumed one always holds a checkpoint: it stays)."""
    if not run_dir.holds_rank_records():
        run_dir.discard()


def launch_job(registry: Registry, job: Job) -> RunSummary | None:
    """Hand a prepared job to its launcher and read what its ranks left (see :func:`run_job`).
    A launcher that refuses the job (a :class:`UserError`) leaves the tracking store as it was,
    unless ranks had started and opened (or continued) a run: that run is marked FAILED."""
    launcher = registry.get("launchers", job.launch.launcher)
    before = _stamp(job.run_dir.tracking_file)
    try:
        with signals_reach_the_ranks():
            outcome: LaunchOutcome = launcher.launch(job)
    except UserError as exc:
        if _stamp(job.run_dir.tracking_file) not in (None, before):
            close_tracking_run(registry, job, "FAILED", exc.message)
        raise
    return read_outcome(registry, job, outcome)


def _stamp(path: Path) -> tuple[int, int] | None:
    """Which version of a file is there (rank 0 replaces ``tracking.json`` whenever it writes it)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns


def read_outcome(registry: Registry, job: Job, outcome: LaunchOutcome) -> RunSummary | None:
    """What the ranks left in the run folder, as a summary or the error to show."""
    run_dir, status = job.run_dir, outcome.status
    if run_dir.stopped_file.is_file() and not run_dir.summary_file.is_file():
        reason = json.loads(run_dir.stopped_file.read_text(encoding="utf-8"))["reason"]
        raise StoppedOnRequest(f"the run {reason}", job.requested)
    if status == 130:
        close_tracking_run(registry, job, "KILLED", "interrupted (Ctrl-C or SIGTERM); every rank was stopped")
        raise JobFailed(
            f"interrupted; every rank was stopped. The run folder is {run_dir.path}; continue with "
            f"`ddpx recipe {job.requested} --resume auto`.",
            130,
        )
    if status == 0 and (job.launch.nnodes > 1 or outcome.detached) and not run_dir.summary_file.is_file():
        return None
    if outcome.killed or status != 0 or not run_dir.summary_file.is_file():
        failure = with_stalls(
            run_dir,
            killed_failure(run_dir, outcome.killed)
            if outcome.killed
            else job_failure(run_dir, status, no_record_message(run_dir, status)),
        )
        close_tracking_run(registry, job, "FAILED", str(failure))
        raise failure
    summary = RunSummary.read(run_dir.summary_file)
    summary.run_dir = str(run_dir.path)
    return summary


def killed_failure(run_dir: RunDir, killed: list[tuple[int, str]]) -> JobFailed:
    rank, name = killed[0]
    return JobFailed(
        f"rank {rank} was killed by {name}, so the job stopped (the other ranks' errors follow from it). "
        "SIGKILL often means the machine ran out of memory (`dmesg` tells) or a scheduler ended the "
        f"job. The run folder is {run_dir.path}.",
        1,
    )


def no_record_message(run_dir: RunDir, status: int) -> str:
    log = f" and {run_dir.launcher_log}" if run_dir.launcher_log.is_file() else ""
    message = f"the job exited with status {status} and no rank recorded an error; see {run_dir.path}{log}"
    free = shutil.disk_usage(run_dir.path).free
    if free < 1 << 20:  # a rank cannot record its error on a full disk
        return (
            f"the job exited with status {status}, and no rank could record its error: the likely cause is "
            + disk_full_message(run_dir.path, "their records", RESUME_FIX)
        )
    return message


def with_stalls(run_dir: RunDir, failure: JobFailed) -> JobFailed:
    """The failure, with where the ranks stood still before it, if any did (a hang that ended in
    a peer's timeout names the rank that hung)."""
    records = read_stalls(run_dir.path)
    if not records:
        return failure
    return JobFailed(f"{failure}\nBefore that, {describe_stalls(records)}", failure.exit_code)
