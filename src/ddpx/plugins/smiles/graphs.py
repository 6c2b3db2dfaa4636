"""The SMILES tasks' splits as molecular graphs, for a model that asks for ``"molecule_graph"``.

Each split is a dataset of ``(graph, label)`` items: the graph is Chemprop's ``MolGraph`` of the
molecule (:mod:`ddpx.plugins.smiles.graph_cache`: featurized once, shared out over the ranks, and stored compactly), the
label a float, or a float tensor of the labels with NaN for a missing cell. :func:`collate_graphs`
batches them into Chemprop's ``BatchMolGraph`` and a label tensor ``(B,)`` or ``(B, L)``; the
trainer moves the batched graph to the device through its ``to`` method. The split is the one
the token models get; molecules RDKit cannot parse have no graph and are left out of their split,
with the count logged once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy
import torch
from torch.utils.data import Dataset

from ddpx.api import TaskData
from ddpx.plugins.smiles.graph_cache import FEATURIZER, cached_graphs, featurize
from ddpx.plugins.smiles.graph_store import GraphStore
from ddpx.plugins.smiles.molecule_features import (
    SCALER_KEY,
    cached_molecule_features,
    compute_features,
    fit_feature_scaler,
)
from ddpx.plugins.smiles.params import NO_FEATURES
from ddpx.plugins.smiles.parsed_rows import model_device, parsed_splits, refuse_unparsed


class GraphWithFeatures(NamedTuple):
    """One molecule's input when the model reads molecule features beside its graph."""

    graph: Any  # Chemprop's MolGraph
    features: torch.Tensor  # (F,) float32


class GraphDataset(Dataset):
    """Molecules ``rows`` of a table's packed graphs, with their labels (and, given
    ``features``, each molecule's row of them beside its graph)."""

    def __init__(self, graphs: GraphStore, rows: Sequence[int], labels: Sequence[Any], features=None):
        self.graphs = graphs
        self.rows = [int(r) for r in rows]
        self.labels = torch.tensor(list(labels), dtype=torch.float32)
        self.features = features

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int):
        graph = self.graphs.graph(self.rows[i])
        if self.features is None:
            return graph, self.labels[i]
        return GraphWithFeatures(graph, torch.from_numpy(numpy.array(self.features[self.rows[i]]))), self.labels[i]


def collate_graphs(batch):
    """``(BatchMolGraph, labels (B,) or (B, L))``: Chemprop's batched graph of the molecules; with
    molecule features, ``((BatchMolGraph, features (B, F)), labels)``."""
    from chemprop.data import BatchMolGraph

    inputs, labels = zip(*batch)
    if isinstance(inputs[0], GraphWithFeatures):
        graphs, features = zip(*inputs)
        return (BatchMolGraph(list(graphs)), torch.stack(list(features))), torch.stack(list(labels))
    return BatchMolGraph(list(inputs)), torch.stack(list(labels))


def graph_task_data(
    smiles: list[str],
    splits: dict[str, Sequence[int]],
    labels: dict[str, list],
    info: dict,
    source: str,
    log: Callable[[str], None],
    molecule_features: str = NO_FEATURES,
    request: Any = None,
    lines: Sequence[int] | None = None,
) -> TaskData:
    """The splits (row indices into ``smiles``, with their ``labels``) as molecular graphs, with
    ``molecule_features`` beside them unless it is "none"; given the rank's ``request``, the ranks
    share the featurizing out.

    ``info`` keeps its keys and gains ``inputs`` ("molecule_graph"), ``featurizer`` and the atom
    and bond feature widths the model is built for (and ``molecule_features`` with the training
    split's feature scaler)."""
    share = {"rank": request.rank, "world_size": request.world_size, "barrier": request.barrier} if request else {}
    graphs = cached_graphs(smiles, log, **share)
    features = None if molecule_features == NO_FEATURES else cached_molecule_features(smiles, molecule_features, log)
    kept = parsed_splits(
        splits,
        labels,
        graphs.parsed,
        source,
        log,
        empty="so a graph model has nothing to train or score there.",
        lines=lines,
    )
    datasets = {name: GraphDataset(graphs, rows, split_labels, features) for name, (rows, split_labels) in kept.items()}
    info = {
        **info,
        "inputs": "molecule_graph",
        "featurizer": FEATURIZER,
        "atom_features": graphs.atom_fdim,
        "bond_features": graphs.bond_fdim,
    }
    if features is not None:
        info["molecule_features"] = molecule_features
        info[SCALER_KEY] = fit_feature_scaler(features[datasets["train"].rows])
    return TaskData(
        train=datasets["train"],
        dev=datasets["dev"],
        heldout=datasets["heldout"],
        info=info,
        collate_fn=collate_graphs,
        source=source,
    )


def batch_to(batch, device: torch.device):
    """A batch's input on ``device``: Chemprop's ``BatchMolGraph`` moves in place."""
    graph, features = batch if isinstance(batch, tuple) else (batch, None)
    graph.to(device)
    return graph if features is None else (graph, features.to(device))


@torch.no_grad()
def graph_outputs(
    model: torch.nn.Module, smiles: list[str], batch_size: int = 256, molecule_features: str = NO_FEATURES
) -> torch.Tensor:
    """The model's eval-mode outputs (logits of a classifier, values of a regression model) for
    each SMILES, on the CPU, with the ``molecule_features`` the model was trained with; a SMILES
    RDKit cannot parse is a :class:`UserError` naming it."""
    graphs = featurize(smiles)
    refuse_unparsed(smiles, graphs.parsed, "so the graph model has no graph for it.")
    dataset = GraphDataset(
        graphs,
        range(len(smiles)),
        [0.0] * len(smiles),
        None if molecule_features == NO_FEATURES else compute_features(smiles, molecule_features),
    )
    was_training = model.training
    model.eval()
    device, outputs = model_device(model), []
    try:
        for start in range(0, len(smiles), batch_size):
            batch, _ = collate_graphs([dataset[row] for row in range(start, min(start + batch_size, len(smiles)))])
            outputs.append(model(batch_to(batch, device)).float().cpu())
    finally:
        model.train(was_training)
    return torch.cat(outputs) if outputs else torch.zeros(0)
