"""Built-in metrics, computed over a complete split.

``accuracy`` takes class logits ``(N, C)`` (argmax) or binary logits ``(N,)`` (threshold 0) and
needs numpy only; ``roc_auc`` takes binary logits ``(N,)`` or two-class logits ``(N, 2)`` — or,
with several labels, targets and logits ``(N, L)`` — and is scikit-learn's, whose import (with pandas and pyarrow, over a second) the computing rank does
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
    """ROC-AUC of one label; of several (targets ``(N, L)``, NaN where a molecule lacks a label),
    MoleculeNet's: each label's ROC-AUC over the molecules that have it, averaged over the labels
    with both classes in the split."""
    from ddpx.api import UserError

    if targets.ndim == 2:
        scores = [_one_roc_auc(column[column == column], outputs[column == column, j])
                  for j, column in enumerate(targets.T) if len(set(column[column == column].tolist())) == 2]
        if not scores:
            raise UserError("ROC-AUC needs both classes of at least one label in the split, but no label has them. "
                            "Use more data, or another split.")
        return float(sum(scores) / len(scores))
    scores = outputs[:, 1] - outputs[:, 0] if outputs.ndim == 2 and outputs.shape[1] == 2 else outputs.reshape(-1)
    labels = targets.reshape(-1).astype(int)
    if len(set(labels.tolist())) < 2:
        raise UserError(
            "ROC-AUC needs both classes in the split, but it holds only one. Use more data or a stratified split."
        )
    return _one_roc_auc(labels, scores)


def _one_roc_auc(labels, scores) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels.astype(int), scores))


@hookimpl
def register_metrics(register):
    register(MetricSpec("accuracy", "fraction of samples whose predicted class is the target", accuracy))
    register(MetricSpec("roc_auc", "area under the ROC curve of a binary classifier", roc_auc,
                        imports=("sklearn.metrics",)))
