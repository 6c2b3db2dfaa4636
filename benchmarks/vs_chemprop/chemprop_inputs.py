"""Chemprop's inputs from ddpx's own split: the molecules a ddpx rank keeps, written as Chemprop's
CSV and splits file, and held-out ROC-AUC computed the same way for both."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path


def ddpx_split(recipe: str, data: Path, overrides: list[str]):
    """The task's graph data as a rank builds it: ``(smiles, labels, label names, splits)`` with
    ``splits`` the row indices of train, dev and held-out (in ddpx's order) into ``smiles``."""
    from ddpx.api import DataRequest
    from ddpx.config.recipe import resolve_recipe
    from ddpx.plugin_host.registry import load_registry
    from ddpx.plugins.smiles.csv_table import read_smiles_csv

    registry = load_registry()
    recipe_config = resolve_recipe(registry, recipe, [f"dataset.path={data.resolve()}", *overrides])
    params = recipe_config.config["dataset"]
    request = DataRequest(
        params=params,
        seed=0,
        rank=0,
        world_size=1,
        local_rank=0,
        barrier=lambda: None,
        log=lambda text: print(f"ddpx data: {text}", file=sys.stderr),
        inputs="molecule_graph",
    )
    task_data = recipe_config.task.build_data(request)
    names = list(params["label_columns"]) or [params["label_column"]]
    table = read_smiles_csv(Path(params["path"]), params["smiles_column"], names, strict=params["strict"])
    rows = {
        name: list(getattr(task_data, split).rows)
        for name, split in (("train", "train"), ("val", "dev"), ("test", "heldout"))
    }
    return table.smiles, table.labels, names, rows


def write_chemprop_inputs(recipe: str, data: Path, overrides: list[str], folder: Path) -> tuple[list[str], list, list]:
    """``chemprop.csv`` (the molecules ddpx keeps, in file order) and ``splits.json``; returns the
    label names and the held-out SMILES and targets, in ddpx's order."""
    smiles, labels, names, rows = ddpx_split(recipe, data, overrides)
    kept = sorted(set().union(*rows.values()))
    position = {row: i for i, row in enumerate(kept)}
    with (folder / "chemprop.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["smiles", *names])
        for row in kept:
            cells = labels[row] if isinstance(labels[row], tuple) else (labels[row],)
            writer.writerow([smiles[row], *("" if v != v else (int(v) if float(v).is_integer() else v) for v in cells)])
    splits = [{name: [position[row] for row in part] for name, part in rows.items()}]
    (folder / "splits.json").write_text(json.dumps(splits), encoding="utf-8")
    heldout = [labels[row] if isinstance(labels[row], tuple) else (float(labels[row]),) for row in rows["test"]]
    return names, [smiles[row] for row in rows["test"]], heldout


def roc_auc(targets: list, scores: list) -> float:
    """Mean ROC-AUC over the labels, each over the molecules that have it (as ddpx's metric)."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    t = np.asarray(targets, dtype=float).reshape(len(targets), -1)
    s = np.asarray(scores, dtype=float).reshape(len(scores), -1)
    values = []
    for j in range(t.shape[1]):
        present = ~np.isnan(t[:, j])
        if len(set(t[present, j])) == 2:
            values.append(roc_auc_score(t[present, j], s[present, j]))
    return float(np.mean(values))
