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
import torch.nn.functional as F
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
    """``z`` while training, ``z * std + mean`` in eval mode (outputs ``(B,)`` or ``(B, T)``).
    With ``variance``, the outputs end in ``(mean, variance)`` (``(B, 2)`` or ``(B, T, 2)``): the
    mean is unscaled so and the variance multiplied by ``std ** 2``. An evidential head's outputs
    ``(mean, v, alpha, beta)`` (last axis four) become, in eval mode, the mean and the total
    variance ``(1 + 1 / v) beta / (alpha - 1)`` (Chemprop's ``evidential-total``), unscaled so."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], variance: bool = False):
        super().__init__(mean, std)
        self.variance = variance

    def forward(self, outputs: torch.Tensor) -> torch.Tensor:
        if self.training:
            return outputs
        if not self.variance:
            return self.unscaled(outputs)
        if outputs.shape[-1] == 4:
            mean, v, alpha, beta = torch.unbind(outputs, dim=-1)
            outputs = torch.stack((mean, (1 + 1 / v) * beta / (alpha - 1)), dim=-1)
        mean, variance = outputs[..., 0], outputs[..., 1]
        std = self.std[0] if variance.dim() == 1 else self.std
        return torch.stack((self.unscaled(mean), variance * std**2), dim=-1)

    def unscaled(self, values: torch.Tensor) -> torch.Tensor:
        if values.dim() == 1:
            return values * self.std[0] + self.mean[0]
        return values * self.std + self.mean


class MeanVariance(nn.Module):
    """A head's ``2 T`` raw outputs per molecule as ``(mean, variance)``: ``(B, 2)`` for one target,
    ``(B, T, 2)`` for several, the variance through a softplus (positive), as Chemprop's ``MveFFN``.
    With ``evidential``, ``4 T`` raw outputs as ``(mean, v, alpha, beta)``, as Chemprop's
    ``EvidentialFFN``: ``v`` and ``beta`` through a softplus, ``alpha`` one more than its softplus."""

    def __init__(self, evidential: bool = False):
        super().__init__()
        self.evidential = evidential

    def forward(self, raw: torch.Tensor) -> torch.Tensor:
        if self.evidential:
            mean, v, alpha, beta = torch.chunk(raw, 4, dim=-1)
            parts = (mean, F.softplus(v), F.softplus(alpha) + 1, F.softplus(beta))
        else:
            mean, variance = torch.chunk(raw, 2, dim=-1)
            parts = (mean, F.softplus(variance))
        return one_target(torch.stack(parts, dim=-1))


def one_target(outputs: torch.Tensor) -> torch.Tensor:
    """A head's outputs without the target axis when there is one target: ``(B, 1)`` as ``(B,)``,
    ``(B, 1, 2)`` (mean, variance) as ``(B, 2)``; several targets' ``(B, T)`` or ``(B, T, 2)`` kept."""
    if outputs.dim() == 3:
        return outputs.squeeze(1) if outputs.shape[1] == 1 else outputs
    return outputs.squeeze(-1) if outputs.shape[-1] == 1 else outputs


def output_step(info: Mapping[str, Any], variance: bool = False) -> nn.Module:
    """What a SMILES model applies to its outputs last: :class:`Unscale` for a regression task
    (``info`` holds a scaler), with ``variance`` for outputs that end in ``(mean, variance)``;
    nothing for a classifier."""
    scaler = info.get(SCALER_KEY)
    return Unscale(scaler["mean"], scaler["std"], variance) if scaler else nn.Identity()
