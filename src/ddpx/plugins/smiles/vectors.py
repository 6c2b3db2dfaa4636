"""The SMILES tasks' splits as molecule-level feature vectors, for a model that asks for
``"molecule_features"`` (``model.name=features_ffn``).

Each split is a dataset of ``(features, label)`` items: the molecule's row of
``dataset.molecule_features`` (Chemprop's featurizers, cached per file by
:mod:`ddpx.plugins.smiles.molecule_features`), a float32 vector, and its label as the graph
splits hold it (a float, or a float tensor with NaN for a missing cell). Batches are stacked by
PyTorch's default collation. The split is the one the token and graph models get; molecules RDKit
cannot parse have no features and are left out of their split, with the count logged once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy
import torch
from torch.utils.data import Dataset

from ddpx.api import TaskData
from ddpx.plugins.smiles.molecule_features import (
    SCALER_KEY,
    cached_molecule_features,
    compute_features,
    fit_feature_scaler,
)
from ddpx.plugins.smiles.parsed_rows import model_device, parsed_splits, refuse_unparsed


def parsed_molecules(features: numpy.ndarray) -> numpy.ndarray:
    """Which molecules RDKit parsed: one it cannot parse has a row of NaN."""
    return ~numpy.isnan(features[:, 0])


class FeatureDataset(Dataset):
    """Rows ``rows`` of a table's feature array, with their labels."""

    def __init__(self, features: numpy.ndarray, rows: Sequence[int], labels: Sequence):
        self.features = features
        self.rows = [int(r) for r in rows]
        self.labels = torch.tensor(list(labels), dtype=torch.float32)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int):
        return torch.from_numpy(numpy.array(self.features[self.rows[i]])), self.labels[i]


def vector_task_data(
    smiles: list[str],
    splits: dict[str, Sequence[int]],
    labels: dict[str, list],
    info: dict,
    source: str,
    log: Callable[[str], None],
    molecule_features: str,
    lines: Sequence[int] | None = None,
) -> TaskData:
    """The splits (row indices into ``smiles``, with their ``labels``) as feature vectors.
    ``info`` gains ``inputs`` ("molecule_features"), ``molecule_features`` and the training
    split's feature scaler, which the model standardises its input with."""
    features = cached_molecule_features(smiles, molecule_features, log)
    kept = parsed_splits(
        splits,
        labels,
        parsed_molecules(features),
        source,
        log,
        empty="so it has no molecule features to train or score on.",
        lines=lines,
    )
    datasets = {name: FeatureDataset(features, rows, split_labels) for name, (rows, split_labels) in kept.items()}
    info = {
        **info,
        "inputs": "molecule_features",
        "molecule_features": molecule_features,
        SCALER_KEY: fit_feature_scaler(features[datasets["train"].rows]),
    }
    return TaskData(train=datasets["train"], dev=datasets["dev"], heldout=datasets["heldout"], info=info, source=source)


@torch.no_grad()
def vector_outputs(
    model: torch.nn.Module, smiles: list[str], molecule_features: str, batch_size: int = 1024
) -> torch.Tensor:
    """The model's eval-mode outputs for each SMILES, on the CPU; a SMILES RDKit cannot parse is
    a :class:`UserError` naming it."""
    features = compute_features(smiles, molecule_features)
    refuse_unparsed(smiles, parsed_molecules(features), "so it has no molecule features.")
    was_training = model.training
    model.eval()
    device = model_device(model)
    try:
        outputs = [
            model(torch.from_numpy(features[start : start + batch_size]).to(device)).float().cpu()
            for start in range(0, len(smiles), batch_size)
        ]
    finally:
        model.train(was_training)
    return torch.cat(outputs) if outputs else torch.zeros(0)
