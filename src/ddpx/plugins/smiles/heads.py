"""What a SMILES model's last layer answers, by the task's kind (``TaskData.info``): a logit per
label (binary classes, one label or several), a logit per class (one label of three classes or
more: ``info["classes"]``, a softmax classifier), or a value per target (regression)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def output_width(info: Mapping[str, Any]) -> int:
    """Outputs per molecule: one per class of a softmax classifier, else one per label or target."""
    return len(info.get("classes") or info.get("labels") or [None])


def softmax_classifier(info: Mapping[str, Any]) -> bool:
    return bool(info.get("classes"))


def chemprop_head(info: Mapping[str, Any], uncertainty: str = "none", **sizes: Any):
    """Chemprop's feed-forward head for the task: ``MulticlassClassificationFFN`` over the classes,
    ``RegressionFFN`` or ``BinaryClassificationFFN`` over the labels, or with ``uncertainty``
    (``model.uncertainty``) ``MveFFN`` or ``EvidentialFFN`` over the targets; ``sizes`` are its
    widths, layers, dropout and activation."""
    from chemprop import nn as chem_nn

    if softmax_classifier(info):
        return chem_nn.MulticlassClassificationFFN(n_classes=output_width(info), n_tasks=1, **sizes)
    head = chem_nn.RegressionFFN if info.get("task_type") == "regression" else chem_nn.BinaryClassificationFFN
    if uncertainty != "none":  # per target the mean and a softplus variance (B, T, 2), or the evidential (B, T, 4)
        head = chem_nn.MveFFN if uncertainty == "mve" else chem_nn.EvidentialFFN
    return head(n_tasks=output_width(info), **sizes)


def per_molecule(outputs):
    """A head's outputs as ``(B,)`` for one output, else ``(B, width)`` (Chemprop's multi-class
    head answers ``(B, 1, classes)``); a variance head's for several targets stay ``(B, T, 2)``
    (``(B, T, 4)`` evidential), and for one target become ``(B, 2)``."""
    if outputs.dim() == 3 and outputs.shape[1] > 1:
        return outputs
    outputs = outputs.flatten(1)
    return outputs.squeeze(-1) if outputs.shape[-1] == 1 else outputs
