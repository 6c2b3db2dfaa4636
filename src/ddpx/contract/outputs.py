"""What a model's outputs hold under each loss: the point prediction, and a variance where the
loss trains one.

A model trained with ``gaussian_nll`` (a variance head beside each value: mean-variance
estimation) or ``evidential`` (deep evidential regression) answers, in eval mode, its outputs with
a last axis of two, ``(mean, variance)``: ``(N, 2)`` for one target, ``(N, T, 2)`` for several,
both in the targets' units (an evidential model's total variance). Every other loss's outputs are
point predictions (logits of a classifier, values of a regression). These functions take numpy
arrays and torch tensors alike.

An ensemble (``train.ensemble_size`` above 1) of plain regression members answers in the same
layout, ``(mean, variance)``, its variance their spread squared: it is read as a ``gaussian_nll``
model's outputs (:func:`ensemble_answer_loss`).
"""

from __future__ import annotations

from typing import Any

VARIANCE_LOSSES = ("gaussian_nll", "evidential")  # eval-mode outputs end in (mean, variance)
REGRESSION_LOSSES = ("mse", *VARIANCE_LOSSES)


def has_variance(loss: str) -> bool:
    """Do the outputs of a model trained with ``loss`` carry a variance?"""
    return loss in VARIANCE_LOSSES


def point_of(outputs: Any, loss: str) -> Any:
    """The point predictions in ``outputs``: the mean where the loss trains a variance, else the outputs."""
    return outputs[..., 0] if has_variance(loss) else outputs


def variance_of(outputs: Any, loss: str) -> Any:
    """The predicted variance in ``outputs`` (the targets' units squared), or ``None``."""
    return outputs[..., 1] if has_variance(loss) else None


def ensemble_answer_loss(loss: str) -> str:
    """The loss whose outputs' form an ensemble of members trained with ``loss`` answers in: a
    regression ensemble of plain members (``mse``) answers its mean and its spread squared as a
    variance, as a variance head does (``gaussian_nll``); any other ensemble answers in its
    members' form (members with a variance head: their mean and total variance)."""
    return "gaussian_nll" if loss == "mse" else loss


def kind_of(loss: str) -> str:
    """``regression``, ``binary`` (one or several 0/1 labels) or ``multiclass``."""
    if loss in REGRESSION_LOSSES:
        return "regression"
    return "binary" if loss == "bce_with_logits" else "multiclass"
