"""The errors ddpx shows to users as one clear paragraph instead of a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserError(Exception):
    """A mistake the user can fix: shown as one paragraph that names the fix.

    ``exit_code`` is 2 for mistakes caught before any process starts (usage errors) and 1
    for those found while the job runs (a missing data file, say).
    """

    exit_code = 2

    def __init__(self, message: str, *, exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        return str(self.args[0])


class PluginError(UserError):
    """A plugin is broken or two plugins clash: names the plugin, its distribution, the fix."""


class JobFailed(Exception):
    """The job's ranks ran and at least one failed; the message is the first failure, once."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code


class StoppedOnRequest(JobFailed):
    """The run checkpointed and stopped on request (SIGUSR1: a preemption notice, a user); exit 75.
    The message says how to continue the run alone; ``where`` says only where it stopped, for a sweep
    or study that ran it and says itself how it goes on."""

    def __init__(self, where: str, requested: str):
        super().__init__(f"{where}. Continue it with `ddpx recipe {requested} --resume auto`.", 75)
        self.where = where


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` Did you mean 'x'?`` for the closest known name, or an empty string."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""


def listed(names: Iterable[str], limit: int = 12) -> str:
    """``'a, b, c'``, or the first ``limit`` names and how many more: an error stays one paragraph
    however many names there are."""
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown if len(names) <= limit else f"{shown} (and {len(names) - limit} more)"
