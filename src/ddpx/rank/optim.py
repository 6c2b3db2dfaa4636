"""The pieces of a training step the recipe chooses: seeding, the optimizer and learning-rate
schedule (registered components, ``train.optimizer`` and ``train.lr_schedule``), and autocast
for ``train.precision``."""

from __future__ import annotations

import random
from contextlib import nullcontext
from typing import Any, Callable, Mapping

import numpy as np
import torch

from ddpx.plugin_host.registry import Registry


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def build_optimizer(registry: Registry, parameters, train: Mapping[str, Any]) -> torch.optim.Optimizer:
    return registry.get("optimizers", train["optimizer"], key="train.optimizer").build(parameters, train)


def build_schedule(registry: Registry, optimizer: torch.optim.Optimizer, train: Mapping[str, Any],
                   steps_per_epoch: int):
    """The per-step learning-rate schedule over the whole run, or ``None`` for a constant rate."""
    total = max(1, train["max_epochs"] * steps_per_epoch)
    return registry.get("schedules", train["lr_schedule"], key="train.lr_schedule").build(optimizer, train, total)


def autocast_factory(device: torch.device, precision: str) -> Callable[[], Any]:
    """A context-manager factory for the forward pass in the recipe's precision."""
    if precision in ("fp32", "32"):
        return nullcontext
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return lambda: torch.autocast(device_type=device.type, dtype=dtype)
