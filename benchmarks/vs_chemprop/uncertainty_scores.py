"""The evaluators ``uncertainty.py`` applies to both programs' held-out outputs: one function per
kind of output, each reading plain arrays of shape ``(N, T)`` (N held-out molecules, T targets or
labels; a NaN target leaves its cell out) and answering the mean over the T columns.

The metrics are ddpx's numpy evaluators (:mod:`ddpx.records.uncertainty_metrics`, Chemprop's
definitions) and the ROC-AUC and RMSE ``run.py`` scores both programs with
(:mod:`benchmarks.vs_chemprop.chemprop_inputs`); which program made the arrays does not enter.

- :func:`variance_scores`: a mean and a variance per cell (an MVE head's, an ensemble's spread
  squared): RMSE, Gaussian NLL, miscalibration area, ENCE, Spearman of the variance with the
  absolute error;
- :func:`interval_scores`: a lower and an upper bound per cell: coverage, mean width (the
  targets' units);
- :func:`probability_scores`: the probability of label 1 per cell: ROC-AUC, NLL, ECE (10 bins);
- :func:`set_scores`: whether each cell's set holds 0 and whether it holds 1: coverage, mean size.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from benchmarks.vs_chemprop.chemprop_inputs import rmse_mae, roc_auc
from ddpx.records import uncertainty_metrics as um


class HeldOut(NamedTuple):
    """One program's held-out answer for one method: the arrays the scorer of ``kind`` (a key of
    ``SCORERS``) reads, by name, or ``kind`` "unavailable" and why."""

    kind: str
    arrays: dict[str, np.ndarray]
    reason: str = ""


def column_mean(values: np.ndarray) -> float:
    """The mean over targets or labels, leaving out one that has no value (no held-out cell)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.nanmean(np.asarray(values, dtype=np.float64)))


def variance_scores(targets: np.ndarray, mean: np.ndarray, variance: np.ndarray) -> dict[str, float]:
    return {
        "rmse": rmse_mae(targets.tolist(), mean.tolist())[0],
        "nll": column_mean(um.gaussian_nll(targets, mean, variance)),
        "miscalibration_area": column_mean(um.miscalibration_area(targets, mean, variance)),
        "ence": column_mean(um.ence(targets, mean, variance)),
        "spearman": column_mean(um.uncertainty_spearman(targets, mean, variance)),
    }


def interval_scores(targets: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> dict[str, float]:
    widths = [np.mean(up - lo) for _, lo, up in um.present_columns(targets, lower, upper)]
    return {
        "coverage": column_mean(um.interval_coverage(targets, lower, upper)),
        "width": column_mean(np.array(widths)),
    }


def probability_scores(targets: np.ndarray, probability: np.ndarray) -> dict[str, float]:
    return {
        "roc_auc": roc_auc(targets.tolist(), probability.tolist()),
        "nll": column_mean(um.binary_nll(targets, probability)),
        "ece": column_mean(um.binary_ece(targets, probability)),
    }


def set_scores(targets: np.ndarray, holds_0: np.ndarray, holds_1: np.ndarray) -> dict[str, float]:
    """``holds_0``, ``holds_1``: booleans, whether each cell's set holds the class."""
    held = np.where(targets == 1, holds_1, holds_0).astype(np.float64)
    size = holds_0.astype(np.float64) + holds_1.astype(np.float64)
    return {
        "coverage": column_mean(np.array([np.mean(h) for _, h in um.present_columns(targets, held)])),
        "set_size": column_mean(np.array([np.mean(s) for _, s in um.present_columns(targets, size)])),
    }


SCORERS = {
    "variance": variance_scores,
    "interval": interval_scores,
    "probability": probability_scores,
    "set": set_scores,
}


def score(kind: str, targets: np.ndarray, arrays: dict[str, np.ndarray]) -> dict[str, float]:
    """The scores of one held-out output of ``kind`` (a key of ``SCORERS``), its arrays by name."""
    return SCORERS[kind](np.asarray(targets, dtype=np.float64), **arrays)
