"""How good a model's uncertainty is: the evaluators, on numpy arrays, one value per target or label.

Regression (``targets``, ``mean`` and ``variance`` of shape ``(N, T)``, NaN targets left out of
their column), Chemprop's definitions (``chemprop.uncertainty``'s evaluators ``nll-regression``,
``miscalibration_area``, ``ence``, ``spearman``, ``conformal-coverage-regression``; the tests
compare the two on the same arrays):

- :func:`gaussian_nll`: the mean of ``log(2 pi var) / 2 + (y - mean)^2 / (2 var)``;
- :func:`miscalibration_area`: for each expected share ``p`` in ``0, 0.01, ..., 1`` the observed
  share of targets inside the central ``p`` interval of each cell's normal distribution; the area
  between that curve and the diagonal (0: the intervals hold what they claim; 0.5 at most);
- :func:`ence`: cells sorted by variance into 100 bins of ``ceil(N / 100)`` consecutive cells; the
  mean over bins of ``|RMV - RMSE| / RMV`` (root mean variance, root mean squared error);
- :func:`uncertainty_spearman`: the Spearman rank correlation of the predicted variance (any
  increasing function of it ranks the same: the standard deviation, an ensemble's spread) with the
  absolute error;
- :func:`interval_coverage`: the share of targets inside ``[lower, upper]``.

Classification: :func:`binary_nll` (each label's mean log loss, probabilities clipped to
``[1e-15, 1 - 1e-15]``), :func:`binary_ece` (expected calibration error of the probability of
label 1: 10 equal-width bins of that probability on ``[0, 1]``, the last one closed; the mean over
bins, weighted by their share of the molecules, of ``|observed share of 1s - mean probability|``),
:func:`top_label_ece` (several classes: the same over the probability of the predicted class
against its accuracy), :func:`multiclass_nll`.

The variance may come from a model's variance head or from anything else that gives one per
prediction (an ensemble's spread squared): the evaluators only read arrays.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator

import numpy as np

ECE_BINS = 10
REGRESSION_BINS = 100  # miscalibration area and ENCE, as Chemprop's evaluators
PROBABILITY_CLIP = 1e-15


def present_columns(targets: np.ndarray, *arrays: np.ndarray) -> Iterator[tuple[np.ndarray, ...]]:
    """Each column's present (non-NaN target) cells of ``targets`` and ``arrays``, all ``(N, T)``."""
    for j in range(targets.shape[1]):
        keep = ~np.isnan(targets[:, j])
        yield (targets[keep, j], *(a[keep, j] for a in arrays))


def gaussian_nll(targets: np.ndarray, mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    return np.array(
        [
            np.mean(np.log(2 * math.pi * v) / 2 + (y - m) ** 2 / (2 * v))
            for y, m, v in present_columns(targets, mean, variance)
        ]
    )


def miscalibration_area(
    targets: np.ndarray, mean: np.ndarray, variance: np.ndarray, bins: int = REGRESSION_BINS
) -> np.ndarray:
    from scipy.special import erfinv

    scaling = erfinv(np.arange(1, bins) / bins) * math.sqrt(2)
    ideal = np.arange(bins + 1) / bins
    areas = []
    for y, m, v in present_columns(targets, mean, variance):
        inside = np.abs(m - y)[None, :] <= np.sqrt(v)[None, :] * scaling[:, None]
        observed = np.concatenate([[0.0], inside.mean(axis=1), [1.0]])
        areas.append(np.abs(observed - ideal).sum() / bins)
    return np.array(areas)


def ence(targets: np.ndarray, mean: np.ndarray, variance: np.ndarray, bins: int = REGRESSION_BINS) -> np.ndarray:
    values = []
    for y, m, v in present_columns(targets, mean, variance):
        order = np.argsort(v, kind="stable")
        size = max(1, math.ceil(len(y) / bins))  # torch.chunk's bins: the last may be smaller
        starts = range(0, len(y), size)
        rmv = np.array([math.sqrt(v[order[s : s + size]].mean()) for s in starts])
        rmse = np.array([math.sqrt(((m - y)[order[s : s + size]] ** 2).mean()) for s in starts])
        values.append(np.mean(np.abs(rmv - rmse) / rmv))
    return np.array(values)


def uncertainty_spearman(targets: np.ndarray, mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    from scipy.stats import spearmanr

    values = []
    for y, m, v in present_columns(targets, mean, variance):
        with warnings.catch_warnings():  # a constant column has no rank correlation: NaN
            warnings.simplefilter("ignore")
            values.append(float(spearmanr(v, np.abs(m - y)).statistic) if len(y) > 1 else math.nan)
    return np.array(values)


def interval_coverage(targets: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    return np.array([np.mean((lo <= y) & (y <= up)) for y, lo, up in present_columns(targets, lower, upper)])


def binary_nll(targets: np.ndarray, probability: np.ndarray) -> np.ndarray:
    values = []
    for y, p in present_columns(targets, probability):
        p = np.clip(p, PROBABILITY_CLIP, 1 - PROBABILITY_CLIP)
        values.append(-np.mean(np.where(y == 1, np.log(p), np.log1p(-p))))
    return np.array(values)


def calibration_bins(probability: np.ndarray, bins: int = ECE_BINS) -> np.ndarray:
    """Each probability's bin among ``bins`` equal-width bins of ``[0, 1]`` (1.0 in the last)."""
    return np.minimum((np.asarray(probability) * bins).astype(np.int64), bins - 1)


def expected_calibration_error(observed: np.ndarray, probability: np.ndarray, bins: int = ECE_BINS) -> float:
    """``sum_b (n_b / N) |mean(observed_b) - mean(probability_b)|`` over equal-width bins."""
    if len(observed) == 0:
        return math.nan
    which = calibration_bins(probability, bins)
    gap = np.bincount(which, weights=observed - probability, minlength=bins)
    return float(np.abs(gap).sum() / len(observed))


def binary_ece(targets: np.ndarray, probability: np.ndarray, bins: int = ECE_BINS) -> np.ndarray:
    return np.array([expected_calibration_error(y, p, bins) for y, p in present_columns(targets, probability)])


def multiclass_nll(targets: np.ndarray, probabilities: np.ndarray) -> float:
    chosen = probabilities[np.arange(len(targets)), targets.astype(np.int64)]
    return float(-np.mean(np.log(np.clip(chosen, PROBABILITY_CLIP, 1.0))))


def top_label_ece(targets: np.ndarray, probabilities: np.ndarray, bins: int = ECE_BINS) -> float:
    predicted = probabilities.argmax(axis=1)
    correct = (predicted == targets.astype(np.int64)).astype(np.float64)
    return expected_calibration_error(correct, probabilities.max(axis=1), bins)
