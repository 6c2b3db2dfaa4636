"""The pieces of a training step the recipe chooses: seeding, the optimizer and learning-rate
schedule (registered components, ``train.optimizer`` and ``train.lr_schedule``), and autocast
for ``train.precision``."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch

from ddpx.contract.specs import OptimizerSpec, ScheduleSpec


def seed_everything(seed: int, deterministic: bool = False) -> None:
    """Seed Python's, NumPy's and torch's generators; with ``deterministic`` (``train.deterministic``)
    torch uses its deterministic kernels too, warning where an op has none. On the CPU that is what
    makes a rank of several threads repeat bit for bit: the backward of indexing a tensor by an index
    tensor (``x[index]``, ``index_put_(accumulate=True)``), which graph models use, otherwise adds in an
    order that varies with the threads. On a GPU, cuBLAS is given its deterministic workspace."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # read at cuBLAS's first call, after this
        torch.use_deterministic_algorithms(True, warn_only=True)


def build_optimizer(spec: OptimizerSpec, parameters, train: Mapping[str, Any]) -> torch.optim.Optimizer:
    """``train.optimizer``'s optimizer (``spec``) over ``parameters``."""
    return spec.build(parameters, train)


def warmup_steps(train: Mapping[str, Any], total_steps: int) -> int:
    """Optimizer steps of linear warm-up: ``train.warmup_steps``, or ``train.warmup_fraction`` of the run."""
    return train["warmup_steps"] or round(train["warmup_fraction"] * total_steps)


def build_schedule(
    spec: ScheduleSpec, optimizer: torch.optim.Optimizer, train: Mapping[str, Any], steps_per_epoch: int
):
    """The per-optimizer-step learning-rate schedule over the whole run — a linear warm-up, then
    the recipe's schedule (``train.lr_schedule``'s ``spec``) over the remaining steps — or
    ``None`` for a constant rate."""
    total = max(1, train["max_epochs"] * steps_per_epoch)
    warmup = min(warmup_steps(train, total), total - 1)
    main = spec.build(optimizer, {**train, "steps_per_epoch": steps_per_epoch}, total - warmup)
    if warmup <= 0:
        return main
    ramp = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1 / warmup, total_iters=warmup)
    if main is None:
        return ramp
    return torch.optim.lr_scheduler.SequentialLR(optimizer, [ramp, main], milestones=[warmup])


def autocast_factory(device: torch.device, precision: str) -> Callable[[], Any]:
    """A context-manager factory for the forward pass in the recipe's precision."""
    if precision in ("fp32", "32"):
        return nullcontext
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return lambda: torch.autocast(device_type=device.type, dtype=dtype)
