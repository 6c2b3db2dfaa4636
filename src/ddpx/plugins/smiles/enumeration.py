"""SMILES enumeration: one molecule written many ways (RDKit's randomised SMILES).

A SMILES string is one walk through the molecule's graph; a model that reads strings learns more
from several walks of each training molecule than from the one the file holds. With
``dataset.enumerate=K`` each training molecule keeps its written SMILES and K randomised ones, and
every time it is drawn (each epoch) it is read as one of them, chosen with the rank's seeded torch
generator (so a resumed run draws as the uninterrupted one). With ``dataset.eval_enumerate=N`` the
dev and held-out predictions average the probabilities of the written SMILES and N randomised ones
(test-time augmentation). Variants are made once per process from a seed, the same on every rank.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch.utils.data import Dataset

from ddpx.plugins.smiles.chem import require_rdkit
from ddpx.plugins.smiles.tokenizer import tokenize


def written_ways(smiles: str, tokens: list[str], extra: int, seed: int) -> list[list[str]]:
    """The tokens of ``smiles`` as written, then of ``extra`` randomised SMILES of the same
    molecule (the written form stands in for one RDKit cannot parse or the tokenizer cannot read)."""
    if extra == 0:
        return [tokens]
    Chem = require_rdkit("dataset.enumerate / dataset.eval_enumerate")
    molecule = Chem.MolFromSmiles(smiles)
    randomised = Chem.MolToRandomSmilesVect(molecule, extra, randomSeed=seed) if molecule is not None else []
    ways = [tokens]
    for text in randomised:
        ways.append(tokenize(text) or tokens)
    return ways + [tokens] * (extra + 1 - len(ways))


def enumerate_all(
    smiles: Sequence[str], tokens: Sequence[list[str]], indices: Sequence[int], extra: int, seed: int
) -> list[list[list[str]]]:
    """Each molecule of ``indices``: its written tokens and ``extra`` randomised ways."""
    return [written_ways(smiles[i], tokens[i], extra, (int(seed) + int(i)) % 2**32) for i in indices]


class EnumeratedSmilesDataset(Dataset):
    """Molecules with several token sequences each. ``pick="random"``: an item is one of them,
    drawn each time (training); ``pick="all"``: an item is all of them (averaged predictions)."""

    def __init__(self, ways: Sequence[Sequence[Sequence[int]]], labels, pick: str):
        self.ways = [[torch.tensor(seq, dtype=torch.long) for seq in molecule] for molecule in ways]
        self.labels = torch.tensor(labels, dtype=torch.float32)
        self.pick = pick

    def __len__(self) -> int:
        return len(self.ways)

    def lengths(self) -> list[int]:
        """Each molecule's written length (what a length-bucketed sampler sorts by)."""
        return [len(molecule[0]) for molecule in self.ways]

    def __getitem__(self, i: int):
        molecule = self.ways[i]
        if self.pick == "all":
            return list(molecule), self.labels[i]
        return molecule[int(torch.randint(len(molecule), ()))], self.labels[i]


def encoded(ways: list[list[list[str]]], encode: Callable[[list[str]], list[int]]) -> list[list[list[int]]]:
    return [[encode(tokens) for tokens in molecule] for molecule in ways]
