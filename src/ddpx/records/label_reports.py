"""Reports of a held-out result with several binary labels (Tox21, SIDER, ClinTox).

``heldout_roc_curves.png``: one ROC curve per label (each over the molecules that have the label),
or — with more labels than a legend can hold — each label's ROC-AUC as a bar, with their mean.
``heldout_predictions.csv``: per molecule, each label's target (empty where missing), logit and
probability. The logit is the score the held-out ROC-AUC ranks, to every digit; the probability is
computed from it in float64 (in float32 it reads 1.0 from a logit of about 17 on, and molecules the
model ranks apart would tie in the file).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ddpx.records.ensemble_columns import SPREAD_COLUMN
from ddpx.records.report_files import new_figure, predictions_csv, save_figure

MOST_CURVES = 12


def label_scores(targets: np.ndarray, scores: np.ndarray, names: Sequence[str]) -> list[tuple[str, int, float]]:
    """``(label, column, ROC-AUC)`` for each label with both classes among the molecules that have it."""
    from sklearn.metrics import roc_auc_score

    scored = []
    for j, name in enumerate(names):
        present = ~np.isnan(targets[:, j])
        labels = targets[present, j].astype(int)
        if len(np.unique(labels)) == 2:
            scored.append((name, j, float(roc_auc_score(labels, scores[present, j]))))
    return scored


def label_roc_png(targets: np.ndarray, logits: np.ndarray, names: Sequence[str], path: Path) -> Path:
    """Scored on the logits, as the held-out metric is (a curve depends only on the ranking)."""
    from sklearn.metrics import roc_curve

    scores = label_scores(targets, logits, names)
    mean = float(np.mean([s for _, _, s in scores])) if scores else float("nan")
    title = f"held-out ROC, {len(scores)} of {len(names)} labels scored, mean ROC-AUC {mean:.4f}"
    if len(names) <= MOST_CURVES:
        fig, ax = new_figure((6, 6))
        for name, j, score in scores:
            present = ~np.isnan(targets[:, j])
            fpr, tpr, _ = roc_curve(targets[present, j].astype(int), logits[present, j])
            ax.plot(fpr, tpr, linewidth=1, label=f"{name} {score:.3f}")
        ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.legend(loc="lower right", fontsize=7)
    else:
        fig, ax = new_figure((7, max(4.0, 0.28 * len(scores) + 1.5)))
        ordered = sorted(scores, key=lambda s: s[2])
        ax.barh(range(len(ordered)), [s for _, _, s in ordered], color="steelblue")
        ax.set_yticks(range(len(ordered)), [name[:40] for name, _, _ in ordered], fontsize=7)
        ax.axvline(mean, color="black", linestyle="--", linewidth=1, label=f"mean {mean:.4f}")
        ax.axvline(0.5, color="grey", linewidth=1)
        ax.set_xlim(0, 1)
        ax.set_xlabel("ROC-AUC")
        ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title, fontsize=9)
    return save_figure(fig, path)


def probabilities_of(logits: np.ndarray) -> np.ndarray:
    """The sigmoid of ``logits`` in float64 (ranks as the logits do up to a logit of about 36)."""
    return 1 / (1 + np.exp(-np.asarray(logits, dtype=np.float64)))


def label_reports(
    targets: np.ndarray, logits: np.ndarray, names: Sequence[str], folder: Path, spread: np.ndarray | None = None
) -> list[Path]:
    """The ROC figure and the predictions CSV; an ensemble's ``spread`` ``(N, L)`` of each label's
    probability as ``ensemble_spread_<label>`` after the label's probability."""
    probabilities = probabilities_of(logits)
    header, columns = [], []
    for j, name in enumerate(names):
        header += [f"target_{name}", f"logit_{name}", f"probability_{name}"]
        columns += [
            np.array([None if np.isnan(t) else int(t) for t in targets[:, j]], dtype=object),
            logits[:, j],
            probabilities[:, j],
        ]
        if spread is not None:
            header.append(f"{SPREAD_COLUMN}_{name}")
            columns.append(np.asarray(spread, dtype=np.float64)[:, j])
    return [
        label_roc_png(targets, logits, names, folder / "heldout_roc_curves.png"),
        predictions_csv(header, columns, folder / "heldout_predictions.csv"),
    ]
