"""Gradient accumulation (``train.accumulate=K``): an optimizer step every K micro-batches.

An epoch's micro-batches fall into steps of K (the last step of an epoch may hold fewer). Each
micro-batch's loss is divided by the number in its step, so the summed gradients are the
gradients of the step's mean loss — with equal micro-batches, those of one batch K times as
large. All but the last micro-batch of a step run without gradient synchronisation, so DDP
all-reduces once per optimizer step.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class MicroBatch:
    """Where one micro-batch stands in its optimizer step."""

    first: bool
    last: bool
    group_size: int  # micro-batches in its optimizer step
    optimizer_step: int  # the epoch's optimizer steps done once this micro-batch's step is taken

    @classmethod
    def at(cls, index: int, batches_per_epoch: int, accumulate: int) -> MicroBatch:
        """The micro-batch ``index`` (from 0) of an epoch of ``batches_per_epoch``."""
        start = index - index % accumulate
        size = min(accumulate, batches_per_epoch - start)
        return cls(
            first=index == start,
            last=index == start + size - 1,
            group_size=size,
            optimizer_step=start // accumulate + 1,
        )


def optimizer_steps(batches: int, accumulate: int) -> int:
    """Optimizer steps taken over ``batches`` micro-batches."""
    return -(-batches // accumulate)


def without_gradient_sync(wrapped: torch.nn.Module) -> AbstractContextManager:
    """The wrapper's way to skip gradient synchronisation (DDP's ``no_sync``), or nothing: a
    wrapper without one synchronises every micro-batch, which gives the same gradients."""
    no_sync = getattr(wrapped, "no_sync", None)
    return no_sync() if callable(no_sync) else nullcontext()
