"""The held-out uncertainty pictures, drawn straight to PNG.

- ``heldout_reliability.png`` (classification): for each of the 10 equal-width probability bins
  that holds molecules, the observed share of 1s against the mean predicted probability of label 1
  (one curve per label, up to 12; beyond, all labels' cells pooled), or with several classes the
  accuracy against the mean confidence of the predicted class; the diagonal is perfect calibration.
  With a calibrator, the model's own probabilities dashed beside the calibrated ones.
- ``heldout_error_vs_uncertainty.png`` (regression with a predicted variance): each held-out
  target's absolute error against its predicted standard deviation (a panel per target, up to 12),
  with the 90 % conformal interval's half-width, ``q std``: the points above it are the ones the
  interval misses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ddpx.contract.outputs import point_of, variance_of
from ddpx.records.calibration import as_table, sigmoid, softmax
from ddpx.records.report_files import new_figure, save_figure
from ddpx.records.uncertainty_metrics import ECE_BINS, calibration_bins, expected_calibration_error
from ddpx.records.uncertainty_reports import COVERAGE, UncertaintyRecord

MOST_CURVES = 12


def reliability_points(observed: np.ndarray, probability: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each non-empty bin's mean probability and observed share."""
    which = calibration_bins(probability, ECE_BINS)
    counts = np.bincount(which, minlength=ECE_BINS)
    held = counts > 0
    mean_p = np.bincount(which, weights=probability, minlength=ECE_BINS)[held] / counts[held]
    return mean_p, np.bincount(which, weights=observed, minlength=ECE_BINS)[held] / counts[held]


def curves(
    targets: np.ndarray, probability: np.ndarray, names: Sequence[str]
) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``(name, observed, probability)`` per label over its present cells; pooled beyond MOST_CURVES."""
    present = ~np.isnan(targets)
    if targets.shape[1] > MOST_CURVES:
        return [(f"{targets.shape[1]} labels pooled", targets[present], probability[present])]
    return [(name, targets[present[:, j], j], probability[present[:, j], j]) for j, name in enumerate(names)]


def reliability_png(record: UncertaintyRecord, outputs: np.ndarray, targets: np.ndarray, path: Path) -> Path:
    calibration = record.calibration
    fig, ax = new_figure((5.5, 5.5))
    if calibration.kind == "multiclass":
        probabilities = softmax(outputs)
        correct = (probabilities.argmax(1) == targets.astype(np.int64)).astype(np.float64)
        drawn = [("predicted class", correct, probabilities.max(1), probabilities.max(1))]
    else:
        targets = as_table(targets)
        raw, answered = sigmoid(as_table(outputs)), sigmoid(as_table(calibration.answer(outputs)))
        names = calibration.labels if len(calibration.labels) > 1 else ["label 1"]
        drawn = [
            (n, y, p, r) for (n, y, p), (_, _, r) in zip(curves(targets, answered, names), curves(targets, raw, names))
        ]
    for name, observed, probability, raw in (d for d in drawn if len(d[1])):  # labels held out at all
        line = ax.plot(
            *reliability_points(observed, probability),
            marker="o",
            linewidth=1,
            label=(f"{name[:30]}: ECE {expected_calibration_error(observed, probability):.3f}"),
        )[0]
        if calibration.method != "none":
            ax.plot(
                *reliability_points(observed, raw),
                marker=".",
                linestyle="--",
                linewidth=1,
                color=line.get_color(),
                label=f"before {calibration.method}: ECE {expected_calibration_error(observed, raw):.3f}",
            )
    ax.plot([0, 1], [0, 1], linestyle=":", color="grey", linewidth=1)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    multiclass = calibration.kind == "multiclass"
    ax.set_xlabel("mean confidence of the predicted class" if multiclass else "mean predicted probability of 1")
    ax.set_ylabel("accuracy" if multiclass else "observed share of 1s")
    ax.set_title(f"held-out reliability ({ECE_BINS} equal-width bins)", fontsize=9)
    ax.legend(loc="upper left", fontsize=7)
    return save_figure(fig, path)


def error_vs_uncertainty_png(record: UncertaintyRecord, outputs: np.ndarray, targets: np.ndarray, path: Path) -> Path:
    """Against the answered variance's standard deviation, with the interval's half-width."""
    calibration = record.calibration
    answered = calibration.answer(outputs)
    targets = as_table(targets)
    error = np.abs(as_table(point_of(answered, calibration.loss)) - targets)
    std = np.sqrt(as_table(variance_of(answered, calibration.loss)))
    q = calibration.thresholds(COVERAGE)
    shown = min(len(calibration.labels), MOST_CURVES)
    columns = math.ceil(math.sqrt(shown))
    rows = math.ceil(shown / columns)
    fig, first = new_figure((4.5 * columns, 4.0 * rows))
    fig.delaxes(first)
    for j, ax in enumerate(fig.subplots(rows, columns, squeeze=False).reshape(-1)):
        if j >= shown:
            ax.set_axis_off()
            continue
        present = ~np.isnan(targets[:, j])
        ax.scatter(std[present, j], error[present, j], s=8, alpha=0.6)
        if present.any() and math.isfinite(q[j]):
            top = float(std[present, j].max())
            ax.plot(
                [0, top],
                [0, q[j] * top],
                color="grey",
                linestyle="--",
                linewidth=1,
                label=f"90 % interval half-width, {q[j]:.2f} std",
            )
            ax.legend(loc="upper left", fontsize=7)
        name = calibration.labels[j] if len(calibration.labels) > 1 else "held-out"
        ax.set_title(f"{name[:40]}: {int(present.sum())} samples", fontsize=9)
        ax.set_xlabel("predicted standard deviation")
        ax.set_ylabel("absolute error")
    return save_figure(fig, path)


def uncertainty_figures(record: UncertaintyRecord, heldout, folder: Path) -> list[Path]:
    """The pictures a held-out result has: the reliability diagram, or the error against the
    predicted uncertainty (a variance head's, or a regression ensemble's); a regression model
    without an uncertainty has neither."""
    outputs, targets = heldout.outputs.double().numpy(), heldout.targets.double().numpy()
    calibration = record.calibration
    if calibration.kind != "regression":
        return [reliability_png(record, outputs, targets, folder / "heldout_reliability.png")]
    if calibration.normalized:
        return [error_vs_uncertainty_png(record, outputs, targets, folder / "heldout_error_vs_uncertainty.png")]
    return []
