"""Deterministic synthetic data for ``mlp_synthetic``: the same tensors on every rank."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch.utils.data import TensorDataset

from ddpx.api import TaskData


def make_splits(params: Mapping[str, Any], seed: int) -> TaskData:
    """Draw train, dev and held-out splits from one generator seeded with ``seed``."""
    n_classes, dim_in = params["n_classes"], params["dim_in"]
    sizes = (params["train_size"], params["dev_size"], params["heldout_size"])
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(n_classes, dim_in, generator=generator) * params["class_sep"]
    total = sum(sizes)
    clean = torch.randint(0, n_classes, (total,), generator=generator)
    inputs = centres[clean] + torch.randn(total, dim_in, generator=generator)
    noisy = torch.rand(total, generator=generator) < params["label_noise"]
    labels = torch.where(noisy, torch.randint(0, n_classes, (total,), generator=generator), clean)
    splits = torch.split(torch.arange(total), list(sizes))
    train, dev, heldout = (TensorDataset(inputs[idx], labels[idx]) for idx in splits)
    return TaskData(train=train, dev=dev, heldout=heldout, info={"dim_in": dim_in, "n_classes": n_classes})
