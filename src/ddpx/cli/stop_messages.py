"""Stops from outside, as the commands that train hear them: from their first line
(:func:`heard_from_the_first_line`), and what a sweep or a study says when it stops before its end
and how the same command goes on: Ctrl-C or SIGTERM (exit 130), or a stop on request (SIGUSR1, a
preemption notice: exit 75). A trial's own message would point at `ddpx recipe --resume auto`,
which trains that one run alone."""

from __future__ import annotations

import functools
from contextlib import contextmanager

from ddpx.contract.errors import JobFailed


def heard_from_the_first_line(command):
    """A command that plans jobs and runs them hears SIGTERM and SIGUSR1 from its first line
    (``launch/signals.py``): a stop that comes while it plans, or between two runs, is not the
    signal's default action (the process ended on the spot, silently); a stop on request then
    reaches each rank as it starts."""

    @functools.wraps(command)
    def heard(*args, **kwargs):
        from ddpx.launch.signals import signals_reach_the_ranks

        with signals_reach_the_ranks():
            return command(*args, **kwargs)

    return heard


def stopped_code(exc: BaseException) -> int | None:
    """130 for Ctrl-C or SIGTERM (a KeyboardInterrupt between runs, or a run's exit), 75 for a stop on
    request; None for any other failure."""
    if isinstance(exc, KeyboardInterrupt):
        return 130
    code = getattr(exc, "exit_code", None)
    return code if code in (75, 130) else None


@contextmanager
def stop_hint(messages: dict[int, str]):
    """A sweep or study stopped (exit 130 or 75): its own message for how it stopped and goes on."""
    try:
        yield
    except (JobFailed, KeyboardInterrupt) as exc:
        code = stopped_code(exc)
        if code is None:
            raise
        raise JobFailed(messages[code], code) from None


def sweep_stop_hint(how: str):
    """A sweep stopped: its trials under way stopped, and ``how`` it goes on."""
    return stop_hint(
        {
            75: "the sweep was stopped on request (SIGUSR1): no trial started after the request, and any trial "
            f"under way checkpointed and stopped. {how}",
            130: "the sweep was interrupted: every rank of the running trial(s) was stopped and each trial's run "
            f"marked KILLED. {how}",
        }
    )


def study_stop_hint(again: str):
    """A study stopped: every finished run is kept, and the command ``again`` goes on where it stopped."""
    return stop_hint(
        {
            75: "the study was stopped on request (SIGUSR1): no run started after the request, and any run under "
            "way checkpointed and stopped; every finished run is kept. The same command goes on where it stopped, "
            f"a run that stopped from its checkpoint: {again}",
            130: f"the study was interrupted; every finished run is kept. The same command goes on where it stopped: {again}",
        }
    )
