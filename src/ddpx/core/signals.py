"""Signals a rank reacts to: SIGUSR1 asks for a checkpoint-and-stop (preemption), SIGTERM ends
the run cleanly (marked KILLED), like Ctrl-C.

Ranks may receive a signal at different steps, so a stop request is agreed on with a collective
every few steps: every rank then stops at the same step boundary. Inside an epoch that
all-reduce is started without waiting and read at the next check, ``train.stop_check_every``
steps later, so it overlaps with training instead of stalling every rank on a tiny collective's
latency; at an epoch's end it is read at once.
"""

from __future__ import annotations

import signal

import torch
import torch.distributed as dist


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop now, as for Ctrl-C."""


class Preempted(Exception):
    """The run checkpointed and stopped on request; it continues when started again."""

    exit_code = 75  # EX_TEMPFAIL: try again later


class StopRequests:
    """Installs the handlers; ``agreed()`` is true on every rank once any rank was asked to stop."""

    def __init__(self, every: int = 10):
        self.every = max(1, every)
        self.requested = False
        self._pending: tuple[torch.Tensor, object] | None = None  # the all-reduce started at the last check
        self._previous = {}
        for sig, handler in ((signal.SIGUSR1, self._preempt), (signal.SIGTERM, self._terminate)):
            try:
                self._previous[sig] = signal.signal(sig, handler)
            except ValueError:  # not the main thread (an embedding application): no handlers
                pass

    def _preempt(self, signum, frame) -> None:
        self.requested = True

    def _terminate(self, signum, frame) -> None:
        raise Terminated("terminated by SIGTERM")

    def agreed(self, step: int, device: torch.device, *, force: bool = False) -> bool:
        """True on every rank alike once a stop was requested on any. Every rank must call it at
        the same steps (the training loop does: ranks take the same number of steps)."""
        if not force and step % self.every:
            return False
        if not dist.is_initialized() or dist.get_world_size() == 1:
            return self.requested
        if self._collect():  # the request was agreed at the previous check
            return True
        flag = torch.tensor([1.0 if self.requested else 0.0], device=device)
        if force:
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            return bool(flag.item())
        self._pending = (flag, dist.all_reduce(flag, op=dist.ReduceOp.MAX, async_op=True))
        return False

    def _collect(self) -> bool:
        if self._pending is None:
            return False
        flag, work = self._pending
        self._pending = None
        work.wait()
        return bool(flag.item())

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
