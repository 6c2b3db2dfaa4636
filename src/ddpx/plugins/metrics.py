"""Built-in metrics, computed over a complete split.

``accuracy`` takes class logits ``(N, C)`` (argmax) or binary logits ``(N,)`` (threshold 0) and
needs numpy only; ``roc_auc`` takes binary logits ``(N,)`` or two-class logits ``(N, 2)`` — or,
with several labels, targets and logits ``(N, L)``; with three classes or more, class targets
``(N,)`` and logits ``(N, C)``: the macro one-vs-rest mean — and is scikit-learn's, whose import
(with pandas and pyarrow, over a second) the computing rank does while it starts
(``MetricSpec.imports``).

The regression metrics take numeric targets ``(N,)`` (outputs ``(N,)`` or ``(N, 1)``) or several
targets ``(N, T)`` with NaN where a sample lacks one, and outputs in the targets' units; each
target is scored over the samples that have it and the scores are averaged over the targets.
They need numpy only. ``rmse`` and ``mae`` are errors (lower is better, ``greater_is_better=False``:
model selection, early stopping, sweeps and searches minimise them); ``r2`` is higher-is-better.
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

    if targets.ndim < 2 and outputs.ndim == 2 and outputs.shape[1] > 2:
        return _macro_roc_auc(targets.reshape(-1).astype(int), outputs)
    if targets.ndim == 2:
        scores = [
            _one_roc_auc(column[column == column], outputs[column == column, j])
            for j, column in enumerate(targets.T)
            if len(set(column[column == column].tolist())) == 2
        ]
        if not scores:
            raise UserError(
                "ROC-AUC needs both classes of at least one label in the split, but no label has them. "
                "Use more data, or another split."
            )
        return float(sum(scores) / len(scores))
    scores = outputs[:, 1] - outputs[:, 0] if outputs.ndim == 2 and outputs.shape[1] == 2 else outputs.reshape(-1)
    labels = targets.reshape(-1).astype(int)
    if len(set(labels.tolist())) < 2:
        raise UserError(
            "ROC-AUC needs both classes in the split, but it holds only one. Use more data or a stratified split."
        )
    return _one_roc_auc(labels, scores)


def class_probabilities(logits):
    """The softmax of class logits ``(N, C)`` in float64 (as the held-out predictions file writes them)."""
    import numpy as np

    shifted = np.asarray(logits, dtype=np.float64)
    shifted = np.exp(shifted - shifted.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def _macro_roc_auc(labels, logits) -> float:
    """Three classes or more: each class against the others, ranked by its softmax probability, and
    the mean over the classes (scikit-learn's macro one-vs-rest); a class the split lacks cannot be
    scored and is left out of the mean."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from ddpx.api import UserError

    probabilities = class_probabilities(logits)
    present = np.unique(labels)
    if len(present) < 2:
        raise UserError(
            "ROC-AUC needs two classes or more in the split, but it holds only one. Use more data or a stratified split."
        )
    if len(present) == probabilities.shape[1]:
        return float(roc_auc_score(labels, probabilities, multi_class="ovr", average="macro"))
    return float(np.mean([roc_auc_score(labels == k, probabilities[:, k]) for k in present]))


def _one_roc_auc(labels, scores) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(labels.astype(int), scores))


def _target_columns(targets, outputs):
    """``(targets, outputs)`` of each target over the samples that have it (NaN cells left out)."""
    import numpy as np

    if targets.ndim < 2 or targets.shape[1] == 1:
        targets, outputs = targets.reshape(-1, 1), outputs.reshape(-1, 1)
    for j in range(targets.shape[1]):
        present = ~np.isnan(targets[:, j])
        yield targets[present, j].astype(np.float64), outputs[present, j].astype(np.float64)


def _per_target_mean(score, least: int, what: str):
    """A metric averaging ``score(targets, outputs)`` over the targets with at least ``least`` values."""

    def compute(targets, outputs) -> float:
        from ddpx.api import UserError

        scores = [score(t, o) for t, o in _target_columns(targets, outputs) if len(t) >= least]
        if not scores:
            raise UserError(
                f"{what} needs at least {least} target value(s) of one target in the split, but it has "
                "none. Use more data, or another split."
            )
        return float(sum(scores) / len(scores))

    compute.__name__ = what
    return compute


def _rmse(targets, outputs) -> float:
    return float(((outputs - targets) ** 2).mean() ** 0.5)


def _mae(targets, outputs) -> float:
    return float(abs(outputs - targets).mean())


def _r2(targets, outputs) -> float:
    """1 - residual / total sum of squares; a constant target scores 1 when predicted exactly, else 0
    (scikit-learn's ``r2_score``)."""
    residual, total = float(((targets - outputs) ** 2).sum()), float(((targets - targets.mean()) ** 2).sum())
    if total == 0:
        return 1.0 if residual == 0 else 0.0
    return 1.0 - residual / total


rmse = _per_target_mean(_rmse, 1, "rmse")
mae = _per_target_mean(_mae, 1, "mae")
r2 = _per_target_mean(_r2, 2, "r2")


@hookimpl
def register_metrics(register):
    register(MetricSpec("accuracy", "fraction of samples whose predicted class is the target", accuracy))
    register(
        MetricSpec(
            "roc_auc",
            "area under the ROC curve of a binary classifier (each label's, averaged); of several classes, "
            "each class's against the others, averaged (macro one-vs-rest)",
            roc_auc,
            imports=("sklearn.metrics",),
        )
    )
    register(
        MetricSpec(
            "rmse",
            "root mean squared error of a regression (each target's, averaged); lower is better",
            rmse,
            greater_is_better=False,
        )
    )
    register(
        MetricSpec(
            "mae",
            "mean absolute error of a regression (each target's, averaged); lower is better",
            mae,
            greater_is_better=False,
        )
    )
    register(MetricSpec("r2", "coefficient of determination R² of a regression (each target's, averaged)", r2))
