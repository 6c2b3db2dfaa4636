"""Token-id sequences of molecules, padded per batch with their true lengths."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import Dataset


class SmilesDataset(Dataset):
    def __init__(self, sequences: Sequence[Sequence[int]], labels: Sequence[int]):
        self.sequences = [torch.tensor(seq, dtype=torch.long) for seq in sequences]
        self.labels = torch.tensor(labels, dtype=torch.float32)

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, i: int):
        return self.sequences[i], self.labels[i]

    def lengths(self) -> list[int]:
        """Each molecule's number of tokens (what a length-bucketed sampler sorts by)."""
        return [len(s) for s in self.sequences]


def collate(batch):
    """``((tokens (B, T) padded with 0, lengths (B,)), labels (B,))``; for molecules given as
    several SMILES each (N of them, :mod:`ddpx.plugins.smiles.enumeration`), ``(tokens (B*N, T),
    lengths (B*N,), N)`` — molecule after molecule — for the model to average."""
    sequences, labels = zip(*batch)
    copies = len(sequences[0]) if isinstance(sequences[0], list) else None
    if copies is not None:
        sequences = [seq for ways in sequences for seq in ways]
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)
    tokens = pad_sequence(list(sequences), batch_first=True, padding_value=0)
    inputs = (tokens, lengths) if copies is None else (tokens, lengths, copies)
    return inputs, torch.stack(labels)
