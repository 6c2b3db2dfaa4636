"""Reports of a held-out result, written by rank 0 and logged as artifacts.

Over exactly the held-out split, in dataset order:

- binary tasks (``bce_with_logits``): ``heldout_roc_curve.png`` and ``heldout_predictions.csv``
  (index, target, logit, probability of class 1); with several labels, the reports of
  :mod:`ddpx.records.label_reports`;
- multi-class tasks (``cross_entropy``): ``heldout_confusion_matrix.png`` (rows are true
  classes, columns predicted ones) and ``heldout_predictions.csv`` (index, target, predicted,
  probability of the predicted class);
- regression tasks (``mse``): the reports of :mod:`ddpx.records.regression_reports`
  (``heldout_predicted_vs_true.png`` and ``heldout_predictions.csv``, in the targets' units).

An ensemble's predictions CSV also holds the spread across its members of each answer (the
probability, the predicted class's probability, the value): ``ensemble_spread``, or
``ensemble_spread_<label>`` beside each label's columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ddpx.records.ensemble_columns import SPREAD_COLUMN
from ddpx.records.label_reports import label_reports, probabilities_of
from ddpx.records.regression_reports import regression_reports
from ddpx.records.report_files import new_figure, predictions_csv, save_figure

COUNTED_CLASSES = 16  # a confusion matrix of more classes shows colours, not counts
MAX_FIGURE_INCHES = 10.0


def roc_curve_png(targets: np.ndarray, scores: np.ndarray, path: Path) -> Path:
    from sklearn.metrics import roc_auc_score, roc_curve

    fig, ax = new_figure((5, 5))
    if len(np.unique(targets)) == 2:
        fpr, tpr, _ = roc_curve(targets, scores)
        ax.plot(fpr, tpr, label=f"ROC-AUC {roc_auc_score(targets, scores):.4f}")
        ax.legend(loc="lower right")
    else:
        ax.text(0.5, 0.5, "one class only: no ROC curve", ha="center")
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title(f"held-out ROC curve ({len(targets)} samples)")
    return save_figure(fig, path)


def confusion_counts(targets: np.ndarray, predicted: np.ndarray, n_classes: int) -> np.ndarray:
    """``counts[i, j]``: samples of true class ``i`` predicted as ``j`` (labels outside
    ``range(n_classes)`` are left out)."""
    targets, predicted = np.asarray(targets, dtype=np.int64), np.asarray(predicted, dtype=np.int64)
    known = (targets >= 0) & (targets < n_classes) & (predicted >= 0) & (predicted < n_classes)
    cells = np.bincount(targets[known] * n_classes + predicted[known], minlength=n_classes * n_classes)
    return cells.reshape(n_classes, n_classes)


def confusion_matrix_png(targets: np.ndarray, predicted: np.ndarray, classes: list[str], path: Path) -> Path:
    """Counts written in the cells up to ``COUNTED_CLASSES`` classes; above that the colour carries
    the matrix (a count in each of 32 x 32 cells is unreadable, and drawing them took a run's rank 0
    two seconds) and ``heldout_predictions.csv`` the numbers."""
    matrix = confusion_counts(targets, predicted, len(classes))
    size = min(MAX_FIGURE_INCHES, max(4.0, 0.45 * len(classes) + 2))
    fig, ax = new_figure((size, size))
    image = ax.imshow(matrix, cmap="Blues")
    ticks = range(0, len(classes), max(1, len(classes) // COUNTED_CLASSES))
    ax.set_xticks(ticks, [classes[k] for k in ticks], rotation=45, ha="right")
    ax.set_yticks(ticks, [classes[k] for k in ticks])
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(f"held-out confusion matrix ({int(matrix.sum())} samples)")
    if len(classes) > COUNTED_CLASSES:
        fig.colorbar(image, ax=ax, shrink=0.8, label="samples")
    else:
        threshold = matrix.max() / 2 if matrix.size else 0
        for (i, j), count in np.ndenumerate(matrix):
            ax.text(
                j, i, str(count), ha="center", va="center", fontsize=8, color="white" if count > threshold else "black"
            )
    return save_figure(fig, path)


def heldout_reports(
    predictions: Any, loss: str, info: Mapping[str, Any], folder: Path, spread: np.ndarray | None = None
) -> list[Path]:
    """The report files for a held-out result; an ensemble's ``spread`` (one column per answer)
    joins the predictions CSV beside each answer (:mod:`ddpx.records.ensemble`)."""
    if predictions is None:
        return []
    import torch

    outputs = predictions.outputs.float()
    targets = predictions.targets.numpy()
    if loss == "mse":
        return regression_reports(targets, outputs.numpy(), info.get("labels") or [], folder, spread)
    if loss == "bce_with_logits" and outputs.dim() == 2 and outputs.shape[1] > 1:
        names = info.get("labels") or [str(j) for j in range(outputs.shape[1])]
        return label_reports(targets, outputs.numpy(), names, folder, spread)
    if loss == "bce_with_logits":
        logits = outputs.reshape(-1)
        probability = probabilities_of(logits.numpy())
        targets = targets.astype(np.int64)  # 0/1 labels, stored as floats for the loss
        header, columns = with_spread_column(
            ["target", "logit", "probability"], [targets, logits.numpy(), probability], spread
        )
        return [
            roc_curve_png(targets, probability, folder / "heldout_roc_curve.png"),
            predictions_csv(header, columns, folder / "heldout_predictions.csv"),
        ]
    probabilities = torch.softmax(outputs, dim=1)
    confidence, predicted = probabilities.max(dim=1)
    classes = [str(c) for c in info.get("classes", range(outputs.shape[1]))]
    header, columns = with_spread_column(
        ["target", "predicted", "probability"], [targets, predicted.numpy(), confidence.numpy()], spread
    )
    return [
        confusion_matrix_png(targets, predicted.numpy(), classes, folder / "heldout_confusion_matrix.png"),
        predictions_csv(header, columns, folder / "heldout_predictions.csv"),
    ]


def with_spread_column(
    header: list[str], columns: list[np.ndarray], spread: np.ndarray | None
) -> tuple[list[str], list[np.ndarray]]:
    """The header and columns of one answer, with an ensemble's spread of it last."""
    if spread is None:
        return header, columns
    return [*header, SPREAD_COLUMN], [*columns, np.asarray(spread, dtype=np.float64).reshape(-1)]
