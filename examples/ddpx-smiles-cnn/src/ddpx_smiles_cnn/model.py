"""``SmilesCNN``: token embeddings, 1-D convolutions of several widths, a max over each molecule's
own tokens (padding never wins the max), dropout and a linear head.

ddpx's SMILES tasks hand a token model ``(tokens, lengths)``: padded token ids ``(B, T)`` and each
molecule's length ``(B,)``; with SMILES enumeration at evaluation, ``(tokens, lengths, N)``: N
SMILES of each molecule in a row, answered as one. The model answers one output per molecule and
label: a logit for a classifier; for a regression task a value standardised while it trains and in
the targets' units in eval mode (the task trains on standardised targets and evaluates on the
file's values).
"""

from __future__ import annotations

import torch
from torch import nn


class SmilesCNN(nn.Module):
    def __init__(
        self,
        vocab_size: int,
        *,
        pad_id: int,
        num_outputs: int,
        scaler: tuple[list[float], list[float]] | None,
        embedding_dim: int,
        filters: int,
        widths: list[int],
        dropout: float,
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_id)
        self.convs = nn.ModuleList(nn.Conv1d(embedding_dim, filters, w, padding=w // 2) for w in widths)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(filters * len(widths), num_outputs)
        self.regression = scaler is not None
        mean, std = scaler if scaler else ([0.0] * num_outputs, [1.0] * num_outputs)
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32))  # saved with the weights
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32))

    def forward(self, inputs: tuple) -> torch.Tensor:
        if len(inputs) == 3:
            return self._mean_of_copies(*inputs)
        tokens, lengths = inputs
        x = self.embedding(tokens).transpose(1, 2)  # (B, E, T)
        padding = torch.arange(tokens.shape[1], device=tokens.device)[None, :] >= lengths.to(tokens.device)[:, None]
        pooled = [conv(x).relu().masked_fill(padding[:, None, :], float("-inf")).amax(dim=-1) for conv in self.convs]
        outputs = self.head(self.dropout(torch.cat(pooled, dim=-1)))
        if self.regression and not self.training:
            outputs = outputs * self.std + self.mean
        return outputs.squeeze(-1) if outputs.shape[-1] == 1 else outputs

    def _mean_of_copies(self, tokens, lengths, copies: int) -> torch.Tensor:
        """N SMILES of each molecule: their mean value (regression) or the logit of their mean probability."""
        outputs = self.forward((tokens, lengths))
        outputs = outputs.reshape(-1, copies, *outputs.shape[1:])
        if self.regression:
            return outputs.mean(dim=1)
        return torch.logit(torch.sigmoid(outputs.float()).mean(dim=1), eps=1e-6).to(outputs.dtype)
