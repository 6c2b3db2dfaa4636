"""What every run records about its uncertainty, from the best weights' dev and held-out predictions.

On dev: the calibration (:mod:`ddpx.records.calibration`: the calibrator ``train.calibration``
names, and the conformal scores). Over exactly the held-out split, of what the model answers
(calibrated when a calibrator is fitted; the model's own values as ``..._uncalibrated`` beside
them), the mean over targets or labels (and each one's, ``<name>/<label>``, when there are several):

- every run: ``heldout_coverage_90``, the share of held-out targets inside their 90 % conformal
  interval, or of labels inside their 90 % conformal prediction set; ``heldout_interval_width_90``
  (the interval's mean width, in the targets' units) or ``heldout_set_size_90`` (the set's mean
  number of classes);
- classification: ``heldout_nll`` (log loss) and ``heldout_ece`` (expected calibration error, 10
  equal-width bins: :mod:`ddpx.records.uncertainty_metrics`);
- regression with a predicted variance (a variance head's, or a regression ensemble's: its
  members' spread squared, or their total variance, :mod:`ddpx.records.ensemble`):
  ``heldout_nll`` (Gaussian), ``heldout_miscalibration_area``, ``heldout_ence`` and
  ``heldout_spearman`` (predicted uncertainty against absolute error).

Per held-out sample, columns for ``heldout_predictions.csv``: the model's ``variance``, the
``calibrated_variance`` or ``calibrated_probability``, the 90 % interval's ``lower`` and ``upper``
or the 90 % ``set`` (its classes joined by ``|``; empty when it holds none).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ddpx.contract.outputs import point_of, variance_of
from ddpx.records import uncertainty_metrics as um
from ddpx.records.calibration import (
    Calibration,
    as_table,
    class_sets,
    fit_calibration,
    intervals,
    sigmoid,
    softmax,
)

COVERAGE = 0.9  # the interval and set every run records
SUFFIX = "90"


@dataclass
class UncertaintyRecord:
    """A run's calibration, its held-out uncertainty metrics and its per-sample columns."""

    calibration: Calibration
    metrics: dict[str, float] = field(default_factory=dict)
    columns: list[tuple[str, np.ndarray]] = field(default_factory=list)


def column_names(info: Mapping[str, Any], count: int) -> list[str]:
    labels = list(info.get("labels") or [])
    return labels if len(labels) == count else [str(j) for j in range(count)]


def record_uncertainty(dev: Any, heldout: Any, loss: str, info: Mapping[str, Any], method: str) -> UncertaintyRecord:
    """Fit the calibration on ``dev`` (gathered predictions: ``outputs``, ``targets``, in the form
    ``loss`` gives) and measure ``heldout`` with it."""
    dev_outputs, outputs = dev.outputs.double().numpy(), heldout.outputs.double().numpy()
    targets = heldout.targets.double().numpy()
    if loss == "cross_entropy":
        classes = [str(c) for c in info.get("classes", range(outputs.shape[1]))]
        calibration = fit_calibration(dev_outputs, dev.targets.numpy(), loss, classes, method)
        return multiclass_record(calibration, outputs, targets.astype(np.int64))
    labels = column_names(info, as_table(point_of(outputs, loss)).shape[1])
    calibration = fit_calibration(dev_outputs, dev.targets.double().numpy(), loss, labels, method)
    record = UncertaintyRecord(calibration)
    with warnings.catch_warnings():  # a label without held-out cells: its values are NaN, left out
        warnings.simplefilter("ignore", RuntimeWarning)
        if calibration.kind == "regression":
            regression_metrics(record, outputs, as_table(targets))
        else:
            binary_metrics(record, outputs, as_table(targets))
    return record


def add_metric(record: UncertaintyRecord, name: str, values: np.ndarray) -> None:
    """``heldout_<name>``: the mean over the columns; and each column's when there are several. A
    column the value cannot be computed for (no held-out cell, a constant uncertainty) is left out."""
    values = np.asarray(values, dtype=np.float64)
    if np.isnan(values).all():
        return
    record.metrics[f"heldout_{name}"] = float(np.nanmean(values))
    labels = record.calibration.labels
    if len(values) > 1:
        for label, value in zip(labels, values):
            if not np.isnan(value):
                record.metrics[f"heldout_{name}/{re.sub(r'[^A-Za-z0-9_. -]', '_', label)}"] = float(value)


def add_column(record: UncertaintyRecord, name: str, values: np.ndarray) -> None:
    """Each label's column, named ``<name>`` for one label, ``<name>_<label>`` for several."""
    labels = record.calibration.labels
    for j, label in enumerate(labels):
        record.columns.append((name if len(labels) == 1 else f"{name}_{label}", values[:, j]))


def regression_metrics(record: UncertaintyRecord, outputs: np.ndarray, targets: np.ndarray) -> None:
    calibration = record.calibration
    answered = calibration.answer(outputs)
    lower, upper = intervals(calibration, answered, COVERAGE)
    add_metric(record, f"coverage_{SUFFIX}", um.interval_coverage(targets, lower, upper))
    add_metric(
        record,
        f"interval_width_{SUFFIX}",
        np.array([np.mean(u - lo) for _, lo, u in um.present_columns(targets, lower, upper)]),
    )
    variance = variance_of(outputs, calibration.loss)
    if variance is not None:
        mean = as_table(point_of(outputs, calibration.loss))
        add_column(record, "variance", as_table(variance))
        variance_metrics(record, targets, mean, as_table(variance_of(answered, calibration.loss)), "")
        if calibration.method != "none":
            add_column(record, "calibrated_variance", as_table(variance_of(answered, calibration.loss)))
            variance_metrics(record, targets, mean, as_table(variance), "_uncalibrated")
    add_column(record, "lower", lower)
    add_column(record, "upper", upper)


def variance_metrics(
    record: UncertaintyRecord, targets: np.ndarray, mean: np.ndarray, variance: np.ndarray, suffix: str
) -> None:
    add_metric(record, f"nll{suffix}", um.gaussian_nll(targets, mean, variance))
    add_metric(record, f"miscalibration_area{suffix}", um.miscalibration_area(targets, mean, variance))
    add_metric(record, f"ence{suffix}", um.ence(targets, mean, variance))
    if not suffix:  # a calibrator scales every variance alike: the ranking, and so the correlation, stays
        add_metric(record, "spearman", um.uncertainty_spearman(targets, mean, variance))


def binary_metrics(record: UncertaintyRecord, outputs: np.ndarray, targets: np.ndarray) -> None:
    calibration = record.calibration
    answered = calibration.answer(outputs)
    probability = sigmoid(as_table(answered))
    add_metric(record, "nll", um.binary_nll(targets, probability))
    add_metric(record, "ece", um.binary_ece(targets, probability))
    if calibration.method != "none":
        raw = sigmoid(as_table(outputs))
        add_metric(record, "nll_uncalibrated", um.binary_nll(targets, raw))
        add_metric(record, "ece_uncalibrated", um.binary_ece(targets, raw))
        add_column(record, "calibrated_probability", probability)
    sets = class_sets(calibration, answered, COVERAGE)  # (N, T, 2)
    held = np.take_along_axis(sets, np.nan_to_num(targets).astype(np.int64)[..., None], axis=2)[..., 0]
    add_metric(record, f"coverage_{SUFFIX}", np.array([np.mean(h) for _, h in um.present_columns(targets, held)]))
    add_metric(
        record, f"set_size_{SUFFIX}", np.array([np.mean(s) for _, s in um.present_columns(targets, sets.sum(2))])
    )
    add_column(record, "set", set_words(sets, ["0", "1"]))


def multiclass_record(calibration: Calibration, outputs: np.ndarray, targets: np.ndarray) -> UncertaintyRecord:
    record = UncertaintyRecord(calibration)
    probabilities = softmax(outputs)
    record.metrics["heldout_nll"] = um.multiclass_nll(targets, probabilities)
    record.metrics["heldout_ece"] = um.top_label_ece(targets, probabilities)
    sets = class_sets(calibration, outputs, COVERAGE)  # (N, C)
    record.metrics[f"heldout_coverage_{SUFFIX}"] = float(np.mean(sets[np.arange(len(targets)), targets]))
    record.metrics[f"heldout_set_size_{SUFFIX}"] = float(np.mean(sets.sum(1)))
    record.columns.append(("set", set_words(sets[:, None, :], calibration.labels)[:, 0]))
    return record


def set_words(sets: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """``(N, T)`` strings of ``(N, T, K)`` set memberships: the classes held, joined by ``|``."""
    words = np.empty(sets.shape[:2], dtype=object)
    for index in np.ndindex(*sets.shape[:2]):
        words[index] = "|".join(name for name, held in zip(names, sets[index]) if held)
    return words
