"""Signals a rank reacts to: SIGUSR1 asks for a checkpoint-and-stop (preemption), SIGTERM ends
the run cleanly (marked KILLED), like Ctrl-C: the worker installs :func:`raise_terminated` for it
as each rank starts; while rank 0 writes an epoch's records it waits for them
(:func:`termination_after_records`).

Ranks may receive a signal at different steps, so a stop request is agreed on with a collective
every few steps: every rank then stops at the same step boundary. Inside an epoch that
all-reduce is started without waiting and read at the next check, so it overlaps with training
instead of stalling every rank on a tiny collective's latency; at an epoch's end it is read at
once. Even so, each check costs the ranks a little (on CPU with gloo, a check every 10 steps of
a small model cost about 4 % of the throughput), so by default the checks are spaced about
:data:`CHECK_SECONDS` apart: each check also carries the slowest rank's time per step, and
every rank derives the same next interval from it. ``train.stop_check_every=N`` fixes it at N
steps instead.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.distributed as dist

from ddpx.rank.diagnostics.stall import BEACON


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop now, as for Ctrl-C."""


def raise_terminated(signum, frame) -> None:
    """The SIGTERM handler of every rank: a clean, recorded stop."""
    raise Terminated("terminated by SIGTERM")


@contextmanager
def termination_after_records() -> Iterator[None]:
    """Rank 0 writes an epoch's records (checkpoint, ``metrics.jsonl``, the tracker) inside this:
    a SIGTERM that arrives meanwhile (a launcher stopping the ranks because a peer failed) takes
    effect once they are written, so the epoch every rank finished is kept. The launchers give a
    stopped rank seconds before they kill it; writing the records takes a fraction of one."""
    arrived: list[int] = []
    try:
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: arrived.append(signum))
    except ValueError:  # not the main thread (an embedding application): nothing deferred
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if arrived:
            signal.raise_signal(signal.SIGTERM)  # handled as it would have been on arrival


def quiet_stops(unraisable) -> None:
    """``sys.unraisablehook`` of every rank: a stop (SIGTERM, SIGINT) that lands inside a callback
    Python cannot raise from — an import lock's, a finaliser — is not printed as an ignored
    exception with a traceback; the launcher ends such a rank after its grace period."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(unraisable)


class Preempted(Exception):
    """The run checkpointed and stopped on request; it continues when started again."""

    exit_code = 75  # EX_TEMPFAIL: try again later


CHECK_SECONDS = 1.0  # the time between two checks that the adaptive interval aims at
FIRST_INTERVAL = 10  # steps between checks until a step has been timed
MAX_INTERVAL = 100_000


def interval_for(seconds_per_step: float, current: int) -> int:
    """The steps between checks that take about :data:`CHECK_SECONDS` (``current`` if untimed)."""
    if seconds_per_step <= 0:
        return current
    return max(1, min(MAX_INTERVAL, round(CHECK_SECONDS / seconds_per_step)))


EARLY_REQUESTS: list[int] = []  # SIGUSR1s that arrived before the training loop listened


def note_early_request(signum, frame) -> None:
    """The SIGUSR1 handler from the rank's start until the training loop's: remember the
    request (the default action would end the rank)."""
    EARLY_REQUESTS.append(signum)


class StopRequests:
    """Installs the SIGUSR1 handler; ``agreed()`` is true on every rank once any rank was asked to stop.

    ``every``: steps between checks; 0 spaces them about :data:`CHECK_SECONDS` apart.
    """

    def __init__(self, every: int = 0):
        self.adaptive = every <= 0
        self.every = FIRST_INTERVAL if self.adaptive else every
        self.requested = bool(EARLY_REQUESTS)
        self._pending: tuple[torch.Tensor, object] | None = None  # the all-reduce started at the last check
        self._timed_from: tuple[int, float] | None = None  # (step, time) of this epoch's last check
        self._previous = {}
        try:
            self._previous[signal.SIGUSR1] = signal.signal(signal.SIGUSR1, self._preempt)
        except ValueError:  # not the main thread (an embedding application): no handler
            pass

    def _preempt(self, signum, frame) -> None:
        self.requested = True

    def agreed(self, step: int, device: torch.device, *, force: bool = False) -> bool:
        """True on every rank alike once a stop was requested on any. Every rank must call it at
        the same steps (the training loop does: ranks take the same number of steps)."""
        if not force and step % self.every:
            return False
        if not dist.is_initialized() or dist.get_world_size() == 1:
            return self.requested
        if self._collect():  # the request was agreed at the previous check
            return True
        # [stop requested, this rank's seconds per step since its last check]; MAX over the ranks
        message = torch.tensor(
            [1.0 if self.requested else 0.0, 0.0 if force else self._seconds_per_step(step)],
            dtype=torch.float64,
            device=device,
        )
        if force:  # an epoch's end: the next epoch's steps are timed afresh
            self._timed_from = None
            with BEACON.waiting_in("all_reduce (the stop check)"):
                dist.all_reduce(message, op=dist.ReduceOp.MAX)
            return bool(message[0].item())
        self._pending = (message, dist.all_reduce(message, op=dist.ReduceOp.MAX, async_op=True))
        return False

    def _seconds_per_step(self, step: int) -> float:
        now = time.perf_counter()
        previous, self._timed_from = self._timed_from, (step, now)
        if previous is None or step <= previous[0]:
            return 0.0
        return (now - previous[1]) / (step - previous[0])

    def _collect(self) -> bool:
        if self._pending is None:
            return False
        message, work = self._pending
        self._pending = None
        with BEACON.waiting_in("all_reduce (the stop check)"):
            work.wait()
        requested, seconds_per_step = message.tolist()
        if self.adaptive:  # every rank read the same values: every rank picks the same interval
            self.every = interval_for(seconds_per_step, self.every)
        return bool(requested)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
