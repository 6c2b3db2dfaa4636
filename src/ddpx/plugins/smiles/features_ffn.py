"""The ``features_ffn`` model: Chemprop's feed-forward head over molecule-level features alone,
after Chemprop 1's ``--features_only`` (which also put dropout on the input, and counted its
output layer among ``--ffn_num_layers``), for a task's ``"molecule_features"`` input.

The features (``dataset.molecule_features``: RDKit descriptors, Morgan fingerprints, or both) are
standardised with the training split's scaler (:class:`~ddpx.plugins.smiles.scaling.Standardise`,
a part of the model, so ``ddpx predict`` and the logged model feed it raw features), then
Chemprop's ``BinaryClassificationFFN``, ``MulticlassClassificationFFN`` (a logit per class) or
``RegressionFFN`` gives one output per molecule and label: logits of a classifier, values of a
regression model in the targets' units in eval mode (with ``model.uncertainty=mve`` or
``evidential``, Chemprop's ``MveFFN`` or ``EvidentialFFN``: a mean and a variance per target).
No graph is built: a model family that reads the molecule as a fixed description, beside the
SMILES string (``smiles_rnn``) and the graph (``dmpnn``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ddpx.plugins.smiles.chemprop_check import import_chemprop
from ddpx.plugins.smiles.heads import chemprop_head, per_molecule
from ddpx.plugins.smiles.molecule_features import SCALER_KEY
from ddpx.plugins.smiles.scaling import Standardise, output_step


class FeaturesFFN(nn.Module):
    """standardise → feed-forward head → output step."""

    def __init__(self, standardise: nn.Module, predictor: nn.Module, output: nn.Module):
        super().__init__()
        self.standardise = standardise
        self.predictor = predictor
        self.output = output

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        outputs = self.predictor.train_step(self.standardise(features))  # logits, or standardised values
        return self.output(per_molecule(outputs))


def build_features_ffn(params: Mapping[str, Any], info: Mapping[str, Any]) -> FeaturesFFN:
    """The model for a task's ``info`` (its feature scaler, labels, task type and target scaler)."""
    import_chemprop("model.name=features_ffn")

    scaler = info.get(SCALER_KEY)
    if info.get("inputs") != "molecule_features" or not scaler:
        from ddpx.api import UserError

        raise UserError(
            "model features_ffn reads molecule-level features, and this task's data holds none. Use a "
            "SMILES task with dataset.molecule_features=morgan_count (or v1_rdkit_2d_normalized)."
        )
    uncertainty = params.get("uncertainty", "none")  # a model saved before the key: none
    variance = uncertainty != "none"
    predictor = chemprop_head(
        info,
        uncertainty,
        input_dim=len(scaler["mean"]),
        hidden_dim=params["hidden_size"],
        n_layers=params["layers"],
        dropout=params["dropout"],
        activation=params["activation"],
    )
    return FeaturesFFN(Standardise(scaler["mean"], scaler["std"]), predictor, output_step(info, variance))
