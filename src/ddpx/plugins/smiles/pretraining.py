"""``moses``: MOSES's training molecules as descriptor-pretraining data for a graph model.

MOSES's training set (1 584 663 SMILES from ZINC Clean Leads, one column ``SMILES``, as the
MIT-licensed ``molsets`` package ships it: ``moses/dataset/data/train.csv.gz``) at
``<data folder>/moses/train.csv.gz``, or any CSV (gzip or plain) with a SMILES column given as
``dataset.path``. Each molecule's targets are the fast RDKit descriptors of
:mod:`ddpx.plugins.smiles.descriptors`, standardised with each descriptor's mean and deviation
over the training split (kept in the run's info and its model, which answers in the
descriptors' units); a multi-target regression: mean squared error over the cells that hold a
value, judged by the mean R² over the descriptors. The split is random (seeded by
``train.seed``): ``dataset.heldout_fraction`` held out, then ``dataset.dev_fraction`` of the rest
for model selection. ``dataset.limit`` takes the file's first N molecules. Graphs and targets are
made once, shared out over the ranks, and cached (:mod:`~ddpx.plugins.smiles.graph_cache`,
:mod:`~ddpx.plugins.smiles.descriptor_cache`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ddpx.api import Param, TaskSpec, UserError
from ddpx.plugins.smiles.smiles_file import read_smiles
from ddpx.plugins.smiles.splits import split_sizes

PARAMS = {
    "path": Param("", "a CSV (or .csv.gz) with a SMILES column (empty: <data folder>/moses/train.csv.gz)"),
    "smiles_column": Param("SMILES", "column holding the SMILES strings"),
    "limit": Param(0, "read the file's first N molecules only (0: every molecule)", minimum=0),
    "heldout_fraction": Param(0.01, "fraction of molecules held out (random)", above=0, below=1),
    "dev_fraction": Param(0.01, "fraction of the rest used for model selection (random)", above=0, below=1),
}


def default_path() -> Path:
    from ddpx.api import data_root

    return data_root() / "moses" / "train.csv.gz"


def data_path(params: Mapping[str, Any]) -> Path:
    return Path(params["path"]).expanduser() if params["path"] else default_path()


def _check(params: Mapping[str, Any], world_size: int = 1, inputs: str = "") -> None:
    from ddpx.plugins.smiles.chem import require_rdkit

    require_rdkit("task moses (its descriptor targets)")
    path = data_path(params)
    if not path.is_file():
        raise UserError(
            f"no SMILES file at '{path}'. MOSES's training set ships in the MIT-licensed molsets package "
            "(moses/dataset/data/train.csv.gz, 1 584 663 molecules): copy it there, or point "
            "dataset.path=FILE to a CSV (or .csv.gz) with a SMILES column."
        )
    read_smiles(path, params["smiles_column"], limit=1)
    if params["limit"]:
        sizes = split_sizes(params["limit"], params["heldout_fraction"], params["dev_fraction"])
        if min(sizes) < max(1, world_size):
            raise UserError(
                f"dataset.limit={params['limit']} gives {sizes[0]} training, {sizes[1]} dev and {sizes[2]} "
                f"held-out molecules, and every split needs at least {max(1, world_size)} (one per rank). "
                "Raise dataset.limit or the fractions."
            )


def _build(request):
    from ddpx.plugins.smiles.pretraining_data import pretraining_data

    return pretraining_data(request, data_path(request.params))


def moses_task(predictor) -> TaskSpec:
    return TaskSpec(
        "moses",
        "MOSES's 1.58 M molecules (ZINC Clean Leads): pretraining a graph model on fast RDKit descriptors",
        _build,
        loss="mse",
        metric="r2",
        params=PARAMS,
        check=_check,
        predictor=predictor,
        inputs=("molecule_graph",),
    )
