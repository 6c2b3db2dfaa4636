"""Built-in metrics, computed over a complete split.

``accuracy`` takes class logits ``(N, C)`` (argmax) or binary logits ``(N,)`` (threshold 0) and
needs numpy only; ``roc_auc`` takes binary logits ``(N,)`` or two-class logits ``(N, 2)`` and is
scikit-learn's, whose import (with pandas and pyarrow, over a second) the computing rank does
while it starts (``MetricSpec.imports``).
"""

from __future__ import annotations

from ddpx.api import MetricSpec, hookimpl


def _predicted_classes(outputs):
    if outputs.ndim == 2 and outputs.shape[1] > 1:
        return outputs.argmax(axis=1)
    return (outputs.reshape(-1) > 0).astype(int)


def accuracy(targets, outputs) -> float:
    return float((targets.reshape(-1).astype(int) == _predicted_classes(outputs)).mean())


def roc_auc(targets, outputs) -> float:
    from sklearn.metrics import roc_auc_score

    from ddpx.api import UserError

    scores = outputs[:, 1] - outputs[:, 0] if outputs.ndim == 2 and outputs.shape[1] == 2 else outputs.reshape(-1)
    labels = targets.reshape(-1).astype(int)
    if len(set(labels.tolist())) < 2:
        raise UserError(
            "ROC-AUC needs both classes in the split, but it holds only one. Use more data or a stratified split."
        )
    return float(roc_auc_score(labels, scores))


@hookimpl
def register_metrics(register):
    register(MetricSpec("accuracy", "fraction of samples whose predicted class is the target", accuracy))
    register(MetricSpec("roc_auc", "area under the ROC curve of a binary classifier", roc_auc,
                        imports=("sklearn.metrics",)))
