"""What a sweep and a study share to run their trials: one trial's job, nested under the parent run
(:func:`run_trial`), and the trials one after another (:func:`run_in_turn`; side by side:
``parallel_trials.py``), stopped as a whole by Ctrl-C, SIGTERM or a stop on request (SIGUSR1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddpx.contract.errors import JobFailed, StoppedOnRequest
from ddpx.launch.parallel_trials import TrialSource
from ddpx.launch.run import run_job
from ddpx.launch.signals import note_stop_request, stop_requested, stopped_on_request
from ddpx.plugin_host.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.launch.sweep import Trial


def run_in_turn(registry: Registry, source: TrialSource, begin, report) -> None:
    """The trials one after another (``begin(trial)`` before each: its link to the parent run, as
    side by side; ``report(trial)`` after). After a
    stop on request (SIGUSR1) none starts; where a trial stopped on request or the source has more, a
    JobFailed (exit 75) ends the sweep or study. A stopped trial is not taken back by its source: a
    search's ``--resume`` runs it again, a study's same command continues it."""
    stopped = False
    while not stop_requested() and (trial := source.next()) is not None:
        begin(trial)
        run_trial(registry, trial)
        if not trial.stopped:
            source.finish(trial)
        stopped |= trial.stopped
        report(trial)
    if stopped or (stop_requested() and source.more()):
        raise stopped_on_request()


def link_to_parent(trial: Trial, parent_run_id: str | None) -> None:
    """Nest the trial's run under the sweep's parent run, beside the tags it has (a study's run's set and
    candidate)."""
    trial.job.parent_run_id = parent_run_id
    trial.job.tags = {**trial.job.tags, "ddpx.sweep.trial": str(trial.number), "ddpx.sweep.parent": parent_run_id or ""}


def run_trial(registry: Registry, trial: Trial) -> None:
    """One trial's job (linked to its parent run by the caller's ``begin``); FINISHED, PRUNED or
    FAILED (Ctrl-C stops all; a trial stopped on request starts no other)."""
    try:
        trial.summary = run_job(registry, trial.recipe, trial.job)
        trial.status = "PRUNED" if trial.summary and trial.summary.pruned_after is not None else "FINISHED"
    except JobFailed as exc:
        trial.status, trial.error = "FAILED", str(exc)
        if isinstance(exc, StoppedOnRequest):  # how it goes on is the sweep's or study's to say
            trial.error, trial.stopped = exc.where, True
            note_stop_request()
        if exc.exit_code == 130:  # Ctrl-C stops the whole sweep
            raise
