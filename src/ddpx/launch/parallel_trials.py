"""Several trials of a sweep at once (``ddpx sweep ... --parallel P``).

The machine is cut into P *slots*: each trial runs in a process of its own
(:mod:`ddpx.launch.trial_process`) pinned to its slot's CPU cores, with ``OMP_NUM_THREADS``
sized to them and, on a GPU machine, ``CUDA_VISIBLE_DEVICES`` naming its slot's GPUs only. Ports
never collide: every trial's rendezvous port is chosen free by the trial itself. A launcher that
submits to a batch system (``slurm``) gets no slot: each trial is its own job there and the
scheduler places it. When a trial ends, the next one takes its slot; a search asks Optuna for the
next trial's values only then, so it learns from every trial that ended before.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ddpx.contract.errors import JobFailed, UserError
from ddpx.contract.job import Job
from ddpx.contract.records import RunSummary
from ddpx.launch.gpus import local_gpu_count
from ddpx.launch.run import prepare_job
from ddpx.launch.signals import signals_reach_the_ranks, stop_requested, stopped_on_request
from ddpx.launch.trial_process import CPUS_VARIABLE, OUTCOME_FILE
from ddpx.plugin_host.registry import Registry
from ddpx.records.tracking import close_tracking_run

STOP_GRACE_S = 30.0


class TrialSource(Protocol):
    """Where a sweep's trials come from: ``next()`` gives the next one to start (None: no more),
    ``more()`` says whether it would (asking for none), ``finish(trial)`` takes one back once it ended."""

    def next(self): ...

    def more(self) -> bool: ...

    def finish(self, trial) -> None: ...


@dataclass
class Slot:
    """One share of this machine: the environment its trial's process gets."""

    number: int
    env: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        words = {CPUS_VARIABLE: "CPU core(s) "}
        return ", ".join(f"{words.get(k, k + '=')}{v}" for k, v in self.env.items()) or "placed by the scheduler"


def plan_slots(job: Job, parallel: int, submits: bool) -> list[Slot]:
    """P slots for ``job``'s trials, or a usage error naming why the machine cannot hold them."""
    if parallel < 1:
        raise UserError(f"--parallel must be at least 1, not {parallel}.")
    if submits:
        return [Slot(i) for i in range(parallel)]
    launch = job.launch
    if launch.master_port is not None or launch.nnodes > 1:
        raise UserError(
            "--parallel runs its trials side by side on this machine, each on a free port of its own: "
            "leave out --master-port, --nnodes and --rdzv-endpoint (or submit the trials to a "
            "cluster with --launcher slurm)."
        )
    slots = [Slot(i) for i in range(parallel)]
    share_gpus(slots, launch.nproc, launch.backend)
    share_cores(slots, launch.nproc)
    return slots


def machine_affords(job: Job, submits: bool) -> int:
    """How many of ``job``'s runs this machine holds at once, each with a core (or a GPU) per rank:
    one where a scheduler places the runs (``--parallel`` says how many to submit at once)."""
    launch = job.launch
    if submits or launch.nnodes > 1 or launch.master_port is not None:
        return 1
    if launch.backend == "nccl" and local_gpu_count():
        return max(1, len(visible_gpus()) // launch.nproc)
    return max(1, len(usable_cores()) // launch.nproc)


def visible_gpus() -> list[str]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return visible.split(",") if visible else [str(i) for i in range(local_gpu_count())]


def usable_cores() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))


def share_gpus(slots: list[Slot], nproc: int, backend: str) -> None:
    gpus = local_gpu_count()
    if gpus == 0 or backend != "nccl":
        return
    devices = visible_gpus()
    per_trial = len(devices) // len(slots)
    if per_trial < nproc:
        raise UserError(
            f"--parallel {len(slots)} with --nproc {nproc} needs {len(slots) * nproc} GPUs, one per rank; "
            f"this machine has {len(devices)}. Lower --parallel or --nproc."
        )
    for slot in slots:
        slot.env["CUDA_VISIBLE_DEVICES"] = ",".join(devices[slot.number * per_trial : (slot.number + 1) * per_trial])


def share_cores(slots: list[Slot], nproc: int) -> None:
    cores = usable_cores()
    per_trial = len(cores) // len(slots)
    for slot in slots:
        if per_trial:
            slot.env[CPUS_VARIABLE] = ",".join(map(str, cores[slot.number * per_trial : (slot.number + 1) * per_trial]))
        if "OMP_NUM_THREADS" not in os.environ:
            slot.env["OMP_NUM_THREADS"] = str(max(1, per_trial // max(1, nproc)))


@dataclass
class Running:
    trial: object
    slot: Slot
    process: subprocess.Popen


def start(registry: Registry, trial, slot: Slot) -> Running:
    """Prepare the trial's run folder and start its process in ``slot``."""
    prepare_job(registry, trial.recipe, trial.job)
    log = trial.job.run_dir.path / "trial.log"
    with log.open("a", encoding="utf-8") as out:  # a run continued in its folder keeps what it said before
        process = subprocess.Popen(
            [sys.executable, "-m", "ddpx.launch.trial_process", str(trial.job.run_dir.job_file)],
            env={**os.environ, **slot.env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Running(trial, slot, process)


def collect(running: Running) -> None:
    """Read the ended trial's outcome (and summary) from its run folder."""
    trial, run_dir = running.trial, running.trial.job.run_dir
    outcome_file = run_dir.path / OUTCOME_FILE
    outcome = (
        json.loads(outcome_file.read_text(encoding="utf-8"))
        if outcome_file.is_file()
        else {
            "status": "FAILED",
            "error": f"its process exited with status {running.process.returncode}; see {run_dir.path / 'trial.log'}",
        }
    )
    if outcome["status"] == "FINISHED" and run_dir.summary_file.is_file():
        trial.summary = RunSummary.read(run_dir.summary_file)
        trial.summary.run_dir = str(run_dir.path)
        trial.status = "PRUNED" if trial.summary.pruned_after is not None else "FINISHED"
    else:
        trial.status, trial.error = "FAILED", outcome.get("error") or "no error recorded"
        if outcome.get("exit_code") == 75:  # stopped on request: so are the others, and none starts
            trial.stopped = True
            os.kill(os.getpid(), signal.SIGUSR1)  # heard by signals_reach_the_ranks, around every trial


def run_side_by_side(
    registry: Registry,
    source: TrialSource,
    slots: list[Slot],
    begin: Callable[[object], None],
    report: Callable[[object], None],
    noun: str = "trial",
) -> None:
    """Keep every slot busy until the source has no more trials (``begin(trial)`` before each
    starts, ``report(trial)`` as each ends); Ctrl-C or SIGTERM stops them all; after a stop on
    request (SIGUSR1) none starts, and once the running ones have stopped a JobFailed (exit 75) ends
    it. ``noun``: what the lines printed call a trial (a study's are its runs)."""
    free, running, stopped = list(slots), [], False
    with signals_reach_the_ranks():
        try:
            while True:
                while free and not stop_requested() and (trial := source.next()) is not None:
                    begin(trial)
                    running.append(start(registry, trial, free.pop(0)))
                    print(
                        f"ddpx: {noun} {trial.number} ({trial.label}) started, {running[-1].slot.describe()}; its "
                        f"output goes to {trial.job.run_dir.path / 'trial.log'}",
                        flush=True,
                    )
                if not running:
                    if stopped or (stop_requested() and source.more()):
                        raise stopped_on_request()
                    return
                for ended in [r for r in running if r.process.poll() is not None]:
                    running.remove(ended)
                    free.append(ended.slot)
                    collect(ended)
                    if not ended.trial.stopped:  # a stopped trial: the same command goes on with it
                        source.finish(ended.trial)
                    stopped |= ended.trial.stopped
                    report(ended.trial)
                time.sleep(0.2)
        except KeyboardInterrupt:
            stop_all(running)
            for item in running:
                collect(item)
                mark_killed(registry, item)
            raise JobFailed(
                f"interrupted; every trial was stopped ({', '.join(str(r.trial.number) for r in running)} "
                "were running; each run is marked KILLED).",
                130,
            ) from None


def mark_killed(registry: Registry, running: Running) -> None:
    """Close a stopped trial's run as KILLED from here, once its process is gone: the trial marks
    it itself, but not when it was stopped before its ranks opened the run or killed after the
    grace period."""
    close_tracking_run(
        registry, running.trial.job, "KILLED", "interrupted (Ctrl-C or SIGTERM); the sweep stopped every trial"
    )


def stop_all(running: list[Running]) -> None:
    """SIGTERM to every trial's process (each stops its ranks and marks its run KILLED), then wait.
    Not SIGINT: a sweep started in the background of a script passes on SIGINT ignored."""
    for item in running:
        if item.process.poll() is None:
            item.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for item in running:
        try:
            item.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            item.process.kill()
            item.process.wait()
