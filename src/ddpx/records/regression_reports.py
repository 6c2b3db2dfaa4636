"""Reports of a held-out regression result (loss ``mse``), in the targets' own units.

``heldout_predicted_vs_true.png``: each target's predictions against its true values (a panel per
target, over the samples that have it, with the diagonal and the target's RMSE);
``heldout_predictions.csv``: per sample, the target and the prediction — with several targets,
``target_<name>`` (empty where missing) and ``prediction_<name>`` for each; an ensemble's
spread of each prediction follows it (``ensemble_spread``, ``ensemble_spread_<name>``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ddpx.records.ensemble_columns import SPREAD_COLUMN
from ddpx.records.report_files import new_figure, predictions_csv, save_figure

MOST_PANELS = 12


def as_columns(values: np.ndarray) -> np.ndarray:
    """``(N, T)`` of ``(N,)``, ``(N, 1)`` or ``(N, T)`` values, as float64."""
    values = np.asarray(values, dtype=np.float64)
    return values.reshape(len(values), -1)


def predicted_vs_true_png(targets: np.ndarray, predictions: np.ndarray, names: Sequence[str], path: Path) -> Path:
    """One scatter panel per target (the first :data:`MOST_PANELS`), predictions against true values."""
    shown = min(len(names), MOST_PANELS)
    columns = math.ceil(math.sqrt(shown))
    rows = math.ceil(shown / columns)
    fig, first = new_figure((4.0 * columns, 4.0 * rows))
    fig.delaxes(first)
    axes = fig.subplots(rows, columns, squeeze=False).reshape(-1)
    for j, ax in enumerate(axes):
        if j >= shown:
            ax.set_axis_off()
            continue
        present = ~np.isnan(targets[:, j])
        true, predicted = targets[present, j], predictions[present, j]
        ax.scatter(true, predicted, s=8, alpha=0.6)
        if len(true):
            low, high = float(min(true.min(), predicted.min())), float(max(true.max(), predicted.max()))
            ax.plot([low, high], [low, high], linestyle="--", color="grey", linewidth=1)
            rmse = float(np.sqrt(np.mean((predicted - true) ** 2)))
            ax.set_title(f"{names[j][:40]}: RMSE {rmse:.4f} ({len(true)} samples)", fontsize=9)
        ax.set_xlabel("true")
        ax.set_ylabel("predicted")
    if shown < len(names):
        fig.suptitle(f"the first {shown} of {len(names)} targets", fontsize=9)
    return save_figure(fig, path)


def regression_reports(
    targets: np.ndarray, outputs: np.ndarray, names: Sequence[str], folder: Path, spread: np.ndarray | None = None
) -> list[Path]:
    """The scatter and the predictions CSV of a held-out regression result; an ensemble's
    ``spread`` of each prediction, in the targets' units, after it (``ensemble_spread[_<name>]``)."""
    targets, predictions = as_columns(targets), as_columns(outputs)
    names = list(names) if len(names) == targets.shape[1] else [str(j) for j in range(targets.shape[1])]
    header, columns = [], []
    for j, name in enumerate(names):
        suffix = "" if len(names) == 1 else f"_{name}"
        header += [f"target{suffix}", f"prediction{suffix}"]
        columns += [
            np.array([None if np.isnan(t) else float(t) for t in targets[:, j]], dtype=object),
            predictions[:, j],
        ]
        if spread is not None:
            header.append(f"{SPREAD_COLUMN}{suffix}")
            columns.append(as_columns(spread)[:, j])
    return [
        predicted_vs_true_png(targets, predictions, names, folder / "heldout_predicted_vs_true.png"),
        predictions_csv(header, columns, folder / "heldout_predictions.csv"),
    ]
