"""Train / dev / held-out splits of a molecule table, identical on every rank.

``random`` (the default, as the seed tutorial): a stratified held-out split of
``heldout_fraction``, then a stratified dev split of ``dev_fraction`` of the rest, both with
``random_state`` = ``train.seed``; with several labels stratification is not defined, and both
splits are plain seeded random ones (as MoleculeNet's random splitter). ``scaffold`` (RDKit):
MoleculeNet's deterministic scaffold splitter — molecules grouped by Bemis–Murcko scaffold,
sets taken largest first, each into training if it still fits under its share, else into dev
if that fits, else held out — so held-out scaffolds are unseen. With ``heldout_fraction`` 0.1
and ``dev_fraction`` 1/9 it is MoleculeNet's 80/10/10.

A file too small for its split, or with too few molecules of one label for a stratified one,
is refused with the counts and the fix (:func:`check_random_split`): every split must hold a
molecule, and a stratified split must be sure to put each label in every split, or the dev and
held-out ROC-AUC are undefined. The check counts only, so it runs before launch as well.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ddpx.api import UserError

if TYPE_CHECKING:
    import numpy as np

Split = tuple["np.ndarray", "np.ndarray", "np.ndarray"]
MOST_ADDED = 100_000  # how far the fix's "at least N" looks


def split_sizes(n: int, heldout_fraction: float, dev_fraction: float) -> tuple[int, int, int]:
    """(train, dev, held-out) sizes of a random split of ``n``, rounded as scikit-learn rounds them."""
    heldout = math.ceil(heldout_fraction * n)
    dev = math.ceil(dev_fraction * (n - heldout))
    return n - heldout - dev, dev, heldout


def _label_in_every_split(count: int, n: int, heldout_fraction: float, dev_fraction: float) -> bool:
    """A stratified split of ``n`` gives each part at least the floor of the label's share of it,
    so ``count`` molecules of a label surely reach train, dev and held-out when every share is 1 or more."""
    heldout = math.ceil(heldout_fraction * n)
    visible = n - heldout
    if count * heldout < n or count * visible < n:
        return False
    visible_count = count * visible // n
    dev = math.ceil(dev_fraction * visible)
    return visible_count * dev >= visible and visible_count * (visible - dev) >= visible


def check_random_split(
    labels: Sequence,
    heldout_fraction: float,
    dev_fraction: float,
    *,
    stratify: bool,
    source: str = "the dataset file",
    names: Sequence[str] | None = None,
) -> None:
    """Refuse a random split that would leave a split empty or, stratified, without one of the
    labels (class ``k`` named ``names[k]`` where the file names its classes)."""
    n = len(labels)
    fractions = f"dataset.heldout_fraction={heldout_fraction:g}, dataset.dev_fraction={dev_fraction:g}"
    if min(split_sizes(n, heldout_fraction, dev_fraction)) < 1:
        need = next(
            (m for m in range(n + 1, n + MOST_ADDED) if min(split_sizes(m, heldout_fraction, dev_fraction))),
            n + MOST_ADDED,
        )
        raise UserError(
            f"{source} has {n} molecule(s), too few to split into training, dev and held-out molecules "
            f"({fractions}). Use a file with at least {need} molecules."
        )
    if not stratify:
        return
    counts = Counter(labels)
    if len(counts) < 2:
        raise UserError(
            f"{source} has {n} molecule(s), all with label {next(iter(counts))}: ROC-AUC needs both "
            "labels. Use a file with molecules of each label."
        )
    for label, count in sorted(counts.items(), key=lambda item: item[1]):
        shown = repr(names[int(label)]) if names else label
        if not _label_in_every_split(count, n, heldout_fraction, dev_fraction):
            need = next(
                (
                    k
                    for k in range(count + 1, count + MOST_ADDED)
                    if _label_in_every_split(k, n - count + k, heldout_fraction, dev_fraction)
                ),
                "more",
            )
            raise UserError(
                f"{source} has {n} molecules, only {count} of them with label {shown}: too few for a stratified "
                f"random split to put label {shown} in each of the training, dev and held-out splits ({fractions}), "
                f"and the dev and held-out ROC-AUC need it there. Add molecules with label {shown} (at least {need} "
                "in all with these fractions)" + (", or raise the fractions." if count >= 3 else ".")
            )


def random_split(
    labels: Sequence,
    seed: int,
    heldout_fraction: float,
    dev_fraction: float,
    *,
    stratify: bool = True,
    source: str = "the dataset file",
    names: Sequence[str] | None = None,
) -> Split:
    import numpy as np
    from sklearn.model_selection import train_test_split

    check_random_split(labels, heldout_fraction, dev_fraction, stratify=stratify, source=source, names=names)
    labels = np.asarray(labels)
    index = np.arange(len(labels))
    try:
        visible, heldout = train_test_split(
            index, stratify=labels if stratify else None, shuffle=True, test_size=heldout_fraction, random_state=seed
        )
        train, dev = train_test_split(
            visible,
            stratify=labels[visible] if stratify else None,
            shuffle=True,
            test_size=dev_fraction,
            random_state=seed,
        )
    except ValueError as exc:
        raise UserError(
            f"cannot make stratified splits of {len(labels)} molecules ({exc}). Each class needs a few molecules "
            "in every split: use more data, or change dataset.heldout_fraction / dataset.dev_fraction."
        ) from None
    return train, dev, heldout


def scaffold_split(
    smiles: Sequence[str], heldout_fraction: float, dev_fraction: float, *, source: str = "the dataset file"
) -> Split:
    import numpy as np

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
        empty = " and ".join(name for name, part in (("dev", dev), ("held-out", heldout)) if not part)
        raise UserError(
            f"{source} has {n} molecule(s) with {len(groups)} distinct scaffold(s), too few for a scaffold "
            f"split: it left the {empty} split empty (dataset.heldout_fraction={heldout_fraction:g}, "
            f"dataset.dev_fraction={dev_fraction:g}). Use a file with more molecules of different "
            "scaffolds, or dataset.split=random."
        )
    return np.array(train), np.array(dev), np.array(heldout)
