"""Pictures of a held-out result, written by rank 0 and logged as artifacts.

Multi-class tasks (cross-entropy) get ``heldout_confusion_matrix.png``: rows are true classes,
columns predicted ones, over exactly the held-out split.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np


def confusion_matrix_png(targets: np.ndarray, predicted: np.ndarray, classes: list[str], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import confusion_matrix

    matrix = confusion_matrix(targets, predicted, labels=list(range(len(classes))))
    size = max(4.0, 0.45 * len(classes) + 2)
    fig, ax = plt.subplots(figsize=(size, size))
    ax.imshow(matrix, cmap="Blues")
    ax.set_xticks(range(len(classes)), classes, rotation=45, ha="right")
    ax.set_yticks(range(len(classes)), classes)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(f"held-out confusion matrix ({int(matrix.sum())} samples)")
    threshold = matrix.max() / 2 if matrix.size else 0
    for (i, j), count in np.ndenumerate(matrix):
        ax.text(j, i, str(count), ha="center", va="center", fontsize=8,
                color="white" if count > threshold else "black")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def heldout_reports(predictions: Any, loss: str, info: Mapping[str, Any], folder: Path) -> list[Path]:
    """The report files for a held-out result (none for binary tasks yet)."""
    if predictions is None or loss != "cross_entropy":
        return []
    outputs = predictions.outputs.numpy()
    classes = [str(c) for c in info.get("classes", range(outputs.shape[1]))]
    return [confusion_matrix_png(predictions.targets.numpy(), outputs.argmax(1), classes,
                                 folder / "heldout_confusion_matrix.png")]
