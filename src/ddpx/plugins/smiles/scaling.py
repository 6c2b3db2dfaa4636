"""Regression targets, standardised on the training split and answered in their own units.

A regression task trains on standardised targets (each target's mean and standard deviation over
the training molecules that have it: ``TaskData.info["target_scaler"]``) and evaluates on the
targets as the file gives them. The model's last step, :class:`Unscale`, leaves its outputs
standardised while it trains and turns them back into the targets' units in eval mode, so dev
and held-out metrics, ``ddpx predict`` and the logged MLflow model all answer in the file's
units. The mean and standard deviation are buffers of the model: saved with its weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

SCALER_KEY = "target_scaler"


def fit_scaler(rows: Sequence[Sequence[float]]) -> dict[str, list[float]]:
    """Each column's mean and standard deviation over its present (non-NaN) cells; a column
    whose cells are all equal gets a deviation of 1."""
    columns = list(zip(*rows))
    means, stds = [], []
    for column in columns:
        present = [v for v in column if v == v]
        mean = sum(present) / len(present)
        var = sum((v - mean) ** 2 for v in present) / len(present)
        means.append(mean)
        stds.append(math.sqrt(var) if var > 0 else 1.0)
    return {"mean": means, "std": stds}


def standardised(rows: Sequence[Sequence[float]], scaler: Mapping[str, list[float]]) -> list[tuple[float, ...]]:
    return [tuple((v - m) / s for v, m, s in zip(row, scaler["mean"], scaler["std"])) for row in rows]


class MeanStd(nn.Module):
    """A mean and a standard deviation per column, as buffers: saved with the model's weights."""

    def __init__(self, mean: Sequence[float], std: Sequence[float]):
        super().__init__()
        self.register_buffer("mean", torch.tensor(list(mean), dtype=torch.float32))
        self.register_buffer("std", torch.tensor(list(std), dtype=torch.float32))


class Standardise(MeanStd):
    """``(x - mean) / std``, in training and eval mode alike (a graph model's molecule features)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


class Unscale(MeanStd):
    """``z`` while training, ``z * std + mean`` in eval mode (outputs ``(B,)`` or ``(B, T)``)."""

    def forward(self, outputs: torch.Tensor) -> torch.Tensor:
        if self.training:
            return outputs
        if outputs.dim() == 1:
            return outputs * self.std[0] + self.mean[0]
        return outputs * self.std + self.mean


def output_step(info: Mapping[str, Any]) -> nn.Module:
    """What a SMILES model applies to its outputs last: :class:`Unscale` for a regression task
    (``info`` holds a scaler), nothing for a classifier."""
    scaler = info.get(SCALER_KEY)
    return Unscale(scaler["mean"], scaler["std"]) if scaler else nn.Identity()
