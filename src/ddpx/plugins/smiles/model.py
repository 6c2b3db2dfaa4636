"""The ``smiles_rnn`` model: embedding, a (bi)directional LSTM or GRU over packed sequences,
and a linear head giving one output per molecule and label (``(B,)`` for one label, ``(B, L)``
for several; ``(B, C)``, a logit per class, for one label of C classes): a logit for a
classifier, a value in the targets' units for a regression task
(:mod:`ddpx.plugins.smiles.scaling`); with ``model.uncertainty=mve`` (or ``evidential``) a
regression model answers a mean and a variance for each target (``(B, 2)`` or ``(B, T, 2)``).
Given several SMILES of each molecule, a classifier answers the logit of their mean probability (a
softmax classifier: the log of their mean class probabilities), a regression model their mean
value (and mean variance)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from ddpx.plugins.smiles.heads import output_width, softmax_classifier
from ddpx.plugins.smiles.scaling import SCALER_KEY, MeanVariance, output_step


def build_smiles_rnn(params, info) -> SmilesRNN:
    """The model for a task's ``info``: its vocabulary, labels and (regression) target scaler."""
    return SmilesRNN(
        len(info["vocab"]),
        pad_id=info["pad_id"],
        num_labels=output_width(info),
        output=output_step(info, variance=params.get("uncertainty", "none") != "none"),
        averages_values=bool(info.get(SCALER_KEY)),
        softmax=softmax_classifier(info),
        **params,
    )


class SmilesRNN(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        *,
        embedding_dim: int = 128,
        d_model: int = 128,
        num_layers: int = 3,
        bidirectional: bool = True,
        dropout: float = 0.2,
        cell: str = "lstm",
        pad_id: int = 0,
        num_labels: int = 1,
        output: nn.Module | None = None,
        averages_values: bool = False,
        softmax: bool = False,
        uncertainty: str = "none",
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_id)
        rnn_class = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn_class(
            embedding_dim,
            d_model,
            num_layers=num_layers,
            bidirectional=bidirectional,
            dropout=dropout if num_layers > 1 else 0.0,
            batch_first=True,
        )
        self.directions = 2 if bidirectional else 1
        self.dropout = nn.Dropout(dropout)
        width = {"none": 1, "mve": 2, "evidential": 4}[uncertainty]  # outputs per label: a variance head's more
        self.head = nn.Linear(self.directions * d_model, num_labels * width)
        self.mean_variance = MeanVariance(evidential=width == 4) if width > 1 else None
        self.output = output if output is not None else nn.Identity()
        self.averages_values = averages_values
        self.softmax = softmax

    def forward(self, inputs: tuple) -> torch.Tensor:
        """``(tokens, lengths)``, or ``(tokens, lengths, N)`` for N SMILES of each molecule in a
        row: then the logit of the mean of their N probabilities."""
        if len(inputs) == 3:
            tokens, lengths, copies = inputs
            outputs = self.forward((tokens, lengths))
            if self.averages_values:
                return outputs.reshape(-1, copies, *outputs.shape[1:]).mean(dim=1)
            if self.softmax:
                mean = torch.softmax(outputs.float(), dim=-1).reshape(-1, copies, outputs.shape[-1]).mean(dim=1)
                return torch.log(mean.clamp_min(1e-12)).to(outputs.dtype)
            mean = torch.sigmoid(outputs.float()).reshape(-1, copies, *outputs.shape[1:]).mean(dim=1)
            return torch.logit(mean, eps=1e-6).to(outputs.dtype)
        tokens, lengths = inputs
        packed = pack_padded_sequence(self.embedding(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, hidden = self.rnn(packed)
        if isinstance(hidden, tuple):  # LSTM: (h, c)
            hidden = hidden[0]
        last_layer = hidden[-self.directions :]  # (directions, B, d_model)
        features = torch.cat(list(last_layer), dim=-1)
        outputs = self.head(self.dropout(features))
        if self.mean_variance is not None:
            return self.output(self.mean_variance(outputs))
        return self.output(outputs.squeeze(-1) if outputs.shape[-1] == 1 else outputs)
