"""Token-id sequences of molecules, padded per batch with their true lengths."""

from __future__ import annotations

from typing import Sequence

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


def collate(batch):
    """``((tokens (B, T) padded with 0, lengths (B,)), labels (B,))``."""
    sequences, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)
    return (pad_sequence(list(sequences), batch_first=True, padding_value=0), lengths), torch.stack(labels)
