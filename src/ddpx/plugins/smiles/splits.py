"""Train / dev / held-out splits of a molecule table, identical on every rank.

``random`` (the default, as the seed tutorial): a stratified held-out split of
``heldout_fraction``, then a stratified dev split of ``dev_fraction`` of the rest, both with
``random_state`` = ``train.seed``; with several labels stratification is not defined, and both
splits are plain seeded random ones (as MoleculeNet's random splitter). ``scaffold`` (RDKit):
MoleculeNet's deterministic scaffold splitter — molecules grouped by Bemis–Murcko scaffold,
sets taken largest first, each into training if it still fits under its share, else into dev
if that fits, else held out — so held-out scaffolds are unseen. With ``heldout_fraction`` 0.1
and ``dev_fraction`` 1/9 it is MoleculeNet's 80/10/10.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from ddpx.api import UserError

Split = tuple[np.ndarray, np.ndarray, np.ndarray]


def random_split(labels: Sequence, seed: int, heldout_fraction: float, dev_fraction: float, *,
                 stratify: bool = True) -> Split:
    from sklearn.model_selection import train_test_split

    labels = np.asarray(labels)
    index = np.arange(len(labels))
    try:
        visible, heldout = train_test_split(index, stratify=labels if stratify else None, shuffle=True,
                                            test_size=heldout_fraction, random_state=seed)
        train, dev = train_test_split(visible, stratify=labels[visible] if stratify else None, shuffle=True,
                                      test_size=dev_fraction, random_state=seed)
    except ValueError as exc:
        raise UserError(
            f"cannot make stratified splits of {len(labels)} molecules ({exc}). Each class needs a few molecules "
            "in every split: use more data, or change dataset.heldout_fraction / dataset.dev_fraction."
        ) from None
    return train, dev, heldout


def scaffold_split(smiles: Sequence[str], heldout_fraction: float, dev_fraction: float) -> Split:
    from ddpx.plugins.smiles.chem import murcko_scaffold

    groups: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(smiles):
        groups[murcko_scaffold(s)].append(i)
    # largest scaffold sets first; equal sizes by descending first index (MoleculeNet's order)
    ordered = sorted(groups.values(), key=lambda g: (len(g), g[0]), reverse=True)
    n = len(smiles)
    train_cap = n * (1 - heldout_fraction) * (1 - dev_fraction)
    visible_cap = n * (1 - heldout_fraction)
    train: list[int] = []
    dev: list[int] = []
    heldout: list[int] = []
    for group in ordered:  # MoleculeNet's rule: a set goes to train if it fits, else dev if it fits, else held-out
        if len(train) + len(group) <= train_cap:
            train += group
        elif len(train) + len(dev) + len(group) <= visible_cap:
            dev += group
        else:
            heldout += group
    if not dev or not heldout:
        raise UserError("the scaffold split left the dev or held-out split empty; the file has too few distinct scaffolds.")
    return np.array(train), np.array(dev), np.array(heldout)
