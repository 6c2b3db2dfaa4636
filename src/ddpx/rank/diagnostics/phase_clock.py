"""``train.time_phases``: where this rank's training epoch goes.

Each training step is split into waiting for its batch (fetching and collating), the forward
pass with the loss, the backward pass (in which DDP all-reduces the gradients) and the optimizer
step (with clipping and the schedule); the clock sums each over the epoch and the epoch's metrics
carry the sums as ``batch_s``, ``forward_s``, ``backward_s`` and ``optimizer_s`` (rank 0's, as
``epoch_s`` is). On a GPU each phase waits for the device's queued work before it is read, so
the phases add up to the epoch at the cost of the overlap between them; on a CPU timing costs
nothing measurable. Off (the default), the clock does nothing at all.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext

import torch

PHASES = ("batch", "forward", "backward", "optimizer")


class PhaseClock:
    def __init__(self, device: torch.device, enabled: bool):
        self.enabled = enabled
        self._sync = torch.cuda.synchronize if enabled and device.type == "cuda" else (lambda: None)
        self.totals = dict.fromkeys(PHASES, 0.0)

    def phase(self, name: str):
        """A block whose time counts to ``name``."""
        return self._timed(name) if self.enabled else nullcontext()

    @contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        self._sync()
        start = time.perf_counter()
        try:
            yield
        finally:
            self._sync()
            self.totals[name] += time.perf_counter() - start

    def batches(self, loader: Iterable) -> Iterable:
        """``loader``, with the wait for each batch counted to ``batch``."""
        if not self.enabled:
            return loader
        return self._timed_batches(loader)

    def _timed_batches(self, loader: Iterable) -> Iterator:
        batches = iter(loader)
        while True:
            with self.phase("batch"):
                batch = next(batches, None)
            if batch is None:
                return
            yield batch

    def take(self) -> dict[str, float]:
        """The epoch's sums as metrics (``{}`` when off), and a fresh start for the next epoch."""
        if not self.enabled:
            return {}
        sums, self.totals = self.totals, dict.fromkeys(PHASES, 0.0)
        return {f"{name}_s": seconds for name, seconds in sums.items()}
