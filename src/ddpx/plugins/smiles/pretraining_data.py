"""The ``moses`` task's splits on every rank: the SMILES read, a seeded random split, the graphs and
descriptor targets made (shared out over the ranks) or read from their caches, and the targets
standardised on the training split.

Nothing grows with the number of molecules but the SMILES themselves and the split's row
numbers (numpy arrays): graphs and targets stay memory-mapped, and a training target is
standardised when its molecule is asked for.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from ddpx.api import DataRequest, TaskData, UserError
from ddpx.plugins.smiles.descriptor_cache import DescriptorTable, cached_descriptors
from ddpx.plugins.smiles.descriptors import NAMES, SET
from ddpx.plugins.smiles.graph_cache import FEATURIZER, cached_graphs
from ddpx.plugins.smiles.graph_store import GraphStore
from ddpx.plugins.smiles.graphs import collate_graphs
from ddpx.plugins.smiles.parsed_rows import SPLIT_NAMES
from ddpx.plugins.smiles.scaling import SCALER_KEY
from ddpx.plugins.smiles.smiles_file import read_smiles
from ddpx.plugins.smiles.splits import split_sizes


class DescriptorGraphDataset(Dataset):
    """Molecules ``rows`` as ``(graph, targets (T,))``: the targets standardised with ``scaler``
    (the training split), or as computed (dev and held-out, scored in the descriptors' units)."""

    def __init__(self, graphs: GraphStore, rows: np.ndarray, targets: DescriptorTable, scaler: dict | None = None):
        self.graphs, self.rows, self.targets = graphs, np.asarray(rows, dtype=np.int64), targets
        self.mean = np.asarray(scaler["mean"], np.float32) if scaler else None
        self.std = np.asarray(scaler["std"], np.float32) if scaler else None

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int):
        row = int(self.rows[i])
        values = np.array(self.targets.row(row), dtype=np.float32)
        if self.mean is not None:
            values = (values - self.mean) / self.std
        return self.graphs.graph(row), torch.from_numpy(values)


def random_rows(n: int, seed: int, heldout_fraction: float, dev_fraction: float) -> dict[str, np.ndarray]:
    """A seeded random split of rows ``0..n-1``: held-out first, then dev of the rest; each in row order."""
    _, dev_size, heldout_size = split_sizes(n, heldout_fraction, dev_fraction)
    order = np.random.default_rng(seed).permutation(n)
    heldout, dev, train = np.split(order, [heldout_size, heldout_size + dev_size])
    return {"train": np.sort(train), "dev": np.sort(dev), "heldout": np.sort(heldout)}


def fit_target_scaler(targets: DescriptorTable, rows: np.ndarray, chunk: int = 65_536) -> dict[str, list[float]]:
    """Each descriptor's mean and standard deviation over ``rows`` (the training molecules) and
    their cells that hold a value, in float64, a chunk of rows at a time; a descriptor that never
    varies (or has no value) gets a deviation of 1."""
    width = len(NAMES)
    total, count = np.zeros(width), np.zeros(width)
    for start in range(0, len(rows), chunk):
        values = targets.rows(rows[start : start + chunk]).astype(np.float64)
        total += np.nansum(values, axis=0)
        count += (~np.isnan(values)).sum(axis=0)
    mean = np.divide(total, count, out=np.zeros(width), where=count > 0)
    squares = np.zeros(width)
    for start in range(0, len(rows), chunk):
        squares += np.nansum((targets.rows(rows[start : start + chunk]).astype(np.float64) - mean) ** 2, axis=0)
    std = np.sqrt(np.divide(squares, count, out=np.zeros(width), where=count > 0))
    return {"mean": mean.tolist(), "std": np.where(std > 0, std, 1.0).tolist()}


def parsed_rows(splits: dict[str, np.ndarray], parsed: np.ndarray, source: str, log) -> dict[str, np.ndarray]:
    """Each split's molecules RDKit can parse (the others have neither graph nor targets)."""
    kept = {name: rows[parsed[rows]] for name, rows in splits.items()}
    dropped = {name: len(splits[name]) - len(rows) for name, rows in kept.items()}
    for name, rows in kept.items():
        if not len(rows):
            raise UserError(
                f"{source}: none of the {len(splits[name])} molecule(s) of the {SPLIT_NAMES[name]} split can be "
                "read by RDKit. Fix the SMILES, or use more of the file (dataset.limit)."
            )
    if any(dropped.values()):
        where = ", ".join(f"{SPLIT_NAMES[name]} {count}" for name, count in dropped.items())
        log(f"skipped {sum(dropped.values())} molecule(s) RDKit cannot parse ({where})")
    return kept


def pretraining_data(request: DataRequest, path: Path) -> TaskData:
    """The three splits of ``path``'s molecules as graphs with their standardised descriptor targets."""
    p = request.params
    smiles = read_smiles(path, p["smiles_column"], p["limit"])
    source = str(path.resolve())
    if min(split_sizes(len(smiles), p["heldout_fraction"], p["dev_fraction"])) < 1:
        raise UserError(f"'{path}' has {len(smiles)} molecule(s), too few to split into training, dev and held-out.")
    share = {"rank": request.rank, "world_size": request.world_size, "barrier": request.barrier}
    graphs = cached_graphs(smiles, request.log, **share)
    targets = cached_descriptors(smiles, request.log, **share)
    splits = parsed_rows(
        random_rows(len(smiles), request.seed, p["heldout_fraction"], p["dev_fraction"]),
        graphs.parsed,
        source,
        request.log,
    )
    scaler = fit_target_scaler(targets, splits["train"])
    request.log(
        f"{len(NAMES)} descriptor targets of {len(splits['train'])} training, {len(splits['dev'])} dev and "
        f"{len(splits['heldout'])} held-out molecules, standardised with the training split's mean and deviation"
    )
    info = {
        "molecules": len(smiles),
        "labels": list(NAMES),
        "task_type": "regression",
        "descriptors": SET,
        SCALER_KEY: scaler,
        "inputs": "molecule_graph",
        "featurizer": FEATURIZER,
        "atom_features": graphs.atom_fdim,
        "bond_features": graphs.bond_fdim,
    }
    return TaskData(
        train=DescriptorGraphDataset(graphs, splits["train"], targets, scaler),
        dev=DescriptorGraphDataset(graphs, splits["dev"], targets),
        heldout=DescriptorGraphDataset(graphs, splits["heldout"], targets),
        info=info,
        collate_fn=collate_graphs,
        source=source,
    )
