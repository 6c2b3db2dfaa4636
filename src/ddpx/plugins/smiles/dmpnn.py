"""The ``dmpnn`` model: Chemprop's directed message-passing network, assembled from Chemprop's own
modules (``chemprop.nn``) as Chemprop's ``MPNN`` assembles them, as a plain ``torch.nn.Module``.

Bond message passing (``BondMessagePassing``; ``AtomMessagePassing`` with
``model.atom_messages``) over Chemprop's batched graph, an aggregation of the atoms into one
vector per molecule (``norm``: the sum divided by ``model.aggregation_norm``, Chemprop's default;
``mean``; ``sum``), batch normalisation when asked, and Chemprop's feed-forward head
(``BinaryClassificationFFN``, ``MulticlassClassificationFFN`` or ``RegressionFFN``) giving one
output per molecule and label (``(B,)`` for one label, ``(B, L)`` for several; ``(B, C)``, a logit
per class, for one label of C classes). A classifier answers logits (the head's
``train_step``: Chemprop applies the sigmoid only when predicting), which ddpx's loss and metrics
expect; a regression model answers in the targets' units in eval mode
(:func:`~ddpx.plugins.smiles.scaling.output_step`, applied last); with ``model.uncertainty=mve``
(``evidential``) Chemprop's ``MveFFN`` (``EvidentialFFN``) head gives a mean and a variance per
target. Trained with
``dataset.molecule_features``, the model reads ``(graph, features)``: the features, standardised
with the training split's scaler, join the molecule vector before the head, as in Chemprop's
``MPNN.fingerprint`` with extra descriptors ``X_d``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ddpx.plugins.smiles.chemprop_check import import_chemprop
from ddpx.plugins.smiles.heads import chemprop_head, per_molecule
from ddpx.plugins.smiles.molecule_features import SCALER_KEY, feature_width
from ddpx.plugins.smiles.scaling import Standardise, output_step


class DMPNN(nn.Module):
    """message passing → aggregation → (batch norm) → (+ standardised molecule features) →
    feed-forward head → output step."""

    def __init__(
        self,
        message_passing: nn.Module,
        agg: nn.Module,
        predictor: nn.Module,
        *,
        batch_norm: bool = False,
        output: nn.Module | None = None,
        features_scale: nn.Module | None = None,
    ):
        super().__init__()
        self.message_passing = message_passing
        self.agg = agg
        self.bn = nn.BatchNorm1d(message_passing.output_dim) if batch_norm else nn.Identity()
        self.features_scale = features_scale
        self.predictor = predictor
        self.output = output if output is not None else nn.Identity()

    def fingerprint(self, bmg, features: torch.Tensor | None = None) -> torch.Tensor:
        """The vector of each molecule the head reads, ``(B, hidden_size + F)`` (Chemprop's
        ``MPNN.fingerprint``): the learned one, then the standardised molecule features if any."""
        learned = self.bn(self.agg(self.message_passing(bmg), bmg.batch))
        if self.features_scale is None:
            return learned
        if features is None:
            raise ValueError("this model was trained with molecule features: call it with (graph, features)")
        return torch.cat((learned, self.features_scale(features)), 1)

    def forward(self, batch) -> torch.Tensor:
        bmg, features = batch if isinstance(batch, tuple) else (batch, None)
        outputs = self.predictor.train_step(self.fingerprint(bmg, features))  # logits, or standardised values
        return self.output(per_molecule(outputs))


def build_message_passing(params: Mapping[str, Any], atom_features: int, bond_features: int) -> nn.Module:
    """The encoder: Chemprop's bond (or, with ``model.atom_messages``, atom) message passing for
    graphs of ``atom_features`` and ``bond_features`` per atom and bond."""
    from chemprop import nn as chem_nn

    passing = chem_nn.AtomMessagePassing if params["atom_messages"] else chem_nn.BondMessagePassing
    return passing(
        d_v=atom_features,
        d_e=bond_features,
        d_h=params["hidden_size"],
        bias=params["message_bias"],
        depth=params["depth"],
        dropout=params["dropout"],
        activation=params["activation"],
        undirected=params["undirected"],
    )


def build_dmpnn(params: Mapping[str, Any], info: Mapping[str, Any]) -> DMPNN:
    """The model for a task's ``info`` (its feature widths, labels, task type and target scaler)
    with the ``model.*`` keys ``params``."""
    import_chemprop("model.name=dmpnn")
    from chemprop import nn as chem_nn

    if "atom_features" not in info:
        from ddpx.api import UserError

        raise UserError(
            "model dmpnn needs molecular graphs, and this task's data holds none (no 'atom_features' in "
            "its info). Use a task that hands out 'molecule_graph' inputs."
        )
    message_passing = build_message_passing(params, info["atom_features"], info["bond_features"])
    if params["aggregation"] == "norm":
        agg = chem_nn.NormAggregation(norm=params["aggregation_norm"])
    else:
        agg = chem_nn.AggregationRegistry[params["aggregation"]]()
    uncertainty = params.get("uncertainty", "none")  # a model saved before the key: none
    variance = uncertainty != "none"
    predictor = chemprop_head(
        info,
        uncertainty,
        input_dim=message_passing.output_dim + feature_width(info),
        hidden_dim=params["ffn_hidden_size"],
        n_layers=params["ffn_layers"],
        dropout=params["dropout"],
        activation=params["activation"],
    )
    scaler = info.get(SCALER_KEY)
    return DMPNN(
        message_passing,
        agg,
        predictor,
        batch_norm=params["batch_norm"],
        output=output_step(info, variance),
        features_scale=Standardise(scaler["mean"], scaler["std"]) if scaler else None,
    )
