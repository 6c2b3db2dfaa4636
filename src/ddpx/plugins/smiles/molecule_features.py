"""Molecule-level features (``dataset.molecule_features``): Chemprop's molecule featurizers, the
"extra descriptors" that ``chemprop train --molecule-featurizers`` concatenates to the learned
molecule vector before the feed-forward head (``dmpnn``), or a model's only input
(``features_ffn``).

**Which.** ``v1_rdkit_2d_normalized`` (200 RDKit descriptors, each mapped through a fitted
cumulative distribution into 0..1: the features of the Chemprop paper), ``v1_rdkit_2d`` (the same
200, raw), ``rdkit_2d`` (RDKit's 217 current descriptors, raw), ``morgan_binary`` and
``morgan_count`` (2 048-bit Morgan fingerprints, radius 2), or several joined by ``+``, their
columns side by side in that order (``morgan_count+v1_rdkit_2d_normalized``). Every feature is standardised with
its mean and deviation over the training molecules
(:class:`~ddpx.plugins.smiles.scaling.Standardise`, a part of the model, so ``ddpx predict`` and
the logged model feed it raw features); a value RDKit cannot compute (NaN, infinite) is 0, as
Chemprop replaces it.

**Cached.** Computed once per table (the RDKit descriptors take 3 to 15 ms a molecule: BBBP about
30 s, HIV about 10 minutes) and kept as one float32 array in
``<data folder>/cache/molecule_features/<key>.npy``, keyed like the graphs (the featurizer's name,
Chemprop's version and the SMILES in order): 0.8 KB a molecule for the 200 descriptors, 8 KB for
a 2 048-bit fingerprint. Read memory-mapped (several featurizers joined by ``+``: each part read so,
then their columns copied side by side into memory); written to a temporary file and renamed into place.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

SCALER_KEY = "molecule_feature_scaler"


def compute_features(smiles: Sequence[str], name: str) -> np.ndarray:
    """``(molecules, features)`` float32, in order; a row RDKit cannot parse is NaN."""
    if "+" in name:
        return np.concatenate([compute_features(smiles, part) for part in name.split("+")], axis=1)
    from chemprop.featurizers import MoleculeFeaturizerRegistry
    from chemprop.utils import make_mol

    featurize_one = MoleculeFeaturizerRegistry[name]()
    rows = np.full((len(smiles), len(featurize_one)), np.nan, dtype=np.float32)
    for i, s in enumerate(smiles):
        try:
            mol = make_mol(s)
        except (RuntimeError, ValueError):  # RDKit cannot parse it (Chemprop raises RuntimeError)
            continue
        with np.errstate(all="ignore"):
            values = np.asarray(featurize_one(mol), dtype=np.float64)
        rows[i] = np.nan_to_num(values, nan=0.0, posinf=0.0, neginf=0.0)
    return rows


def cached_molecule_features(smiles: Sequence[str], name: str, log: Callable[[str], None] = print) -> np.ndarray:
    """The features of ``smiles``: from the disk cache, else computed now (and written there);
    several featurizers joined by ``+`` are cached one by one."""
    if "+" in name:
        return np.concatenate([cached_molecule_features(smiles, part, log) for part in name.split("+")], axis=1)
    from ddpx.api import data_root
    from ddpx.plugins.smiles.graph_cache import cache_key

    path = data_root() / "cache" / "molecule_features" / f"{cache_key(smiles, featurizer=name)}.npy"
    try:
        return np.load(path, mmap_mode="r")
    except (OSError, ValueError):
        pass
    log(f"computing {name} features of {len(smiles)} molecules with Chemprop's featurizer (once: kept in {path})")
    rows = compute_features(smiles, name)
    _write(rows, path)
    return rows


def _write(rows: np.ndarray, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".npy", dir=path.parent)
    except OSError:
        return  # the folder cannot be written: the features stay in memory
    try:
        with os.fdopen(handle, "wb") as out:
            np.save(out, rows)
        os.replace(temporary, path)
    except OSError:
        Path(temporary).unlink(missing_ok=True)


def fit_feature_scaler(rows: np.ndarray, chunk: int = 4096) -> dict[str, list[float]]:
    """Each feature's mean and standard deviation over ``rows`` (the training molecules), summed
    in float64 a chunk of rows at a time (a wide table is never copied whole); a feature that
    never varies gets a deviation of 1."""
    n = len(rows)
    total = np.zeros(rows.shape[1], dtype=np.float64)
    for start in range(0, n, chunk):
        total += np.asarray(rows[start : start + chunk], dtype=np.float64).sum(axis=0)
    mean = total / n
    squares = np.zeros_like(mean)
    for start in range(0, n, chunk):
        squares += ((np.asarray(rows[start : start + chunk], dtype=np.float64) - mean) ** 2).sum(axis=0)
    std = np.sqrt(squares / n)
    return {"mean": mean.tolist(), "std": np.where(std > 0, std, 1.0).tolist()}


def feature_width(info: Mapping) -> int:
    """How many molecule-level features a graph model's head receives beside the graph's vector."""
    scaler = info.get(SCALER_KEY)
    return len(scaler["mean"]) if scaler else 0
