"""Chemprop's inputs from ddpx's own split: the molecules a ddpx rank keeps, written as Chemprop's
CSV and splits file, and the held-out scores computed the same way for both: ROC-AUC for a
classification set, RMSE and MAE for a regression set (:func:`heldout_scores`)."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def ddpx_split(recipe: str, data: Path, overrides: Sequence[str]):
    """The task's graph data as a rank builds it: ``(smiles, labels, label names, splits)`` with
    ``splits`` the row indices of train, dev and held-out (in ddpx's order) into ``smiles``."""
    from ddpx.api import DataRequest
    from ddpx.config.recipe import resolve_recipe
    from ddpx.plugin_host.registry import load_registry
    from ddpx.plugins.smiles.data import read_table
    from ddpx.plugins.smiles.scaling import SCALER_KEY

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
    regression = SCALER_KEY in task_data.info  # a regression task's targets are standardised (scaling.py)
    table = read_table(Path(params["path"]), params, regression, lambda text: None)  # as the rank reads it
    rows = {
        name: list(getattr(task_data, split).rows)
        for name, split in (("train", "train"), ("val", "dev"), ("test", "heldout"))
    }
    return table.smiles, table.labels, names, rows


def write_chemprop_inputs(
    recipe: str, data: Path, overrides: Sequence[str], folder: Path
) -> tuple[list[str], list, list]:
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


def same_targets(theirs: list, targets: list) -> bool:
    """Whether two tables of targets (rows of per-target values) are the same molecules' targets in
    the same order: equal to 1e-5 (one side may have been written in float32), NaN where the other is."""
    return len(theirs) == len(targets) and all(
        len(row) == len(want) and all(a == b or (a != a and b != b) or abs(a - b) < 1e-5 for a, b in zip(row, want))
        for row, want in zip(theirs, targets)
    )


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


def rmse_mae(targets: list, predictions: list) -> tuple[float, float]:
    """Mean RMSE and mean MAE over the targets, each over the molecules that have it (as ddpx's
    metric), in the targets' units."""
    import numpy as np

    t = np.asarray(targets, dtype=float).reshape(len(targets), -1)
    p = np.asarray(predictions, dtype=float).reshape(len(predictions), -1)
    rmse, mae = [], []
    for j in range(t.shape[1]):
        present = ~np.isnan(t[:, j])
        error = p[present, j] - t[present, j]
        rmse.append(float(np.sqrt(np.mean(error**2))))
        mae.append(float(np.mean(np.abs(error))))
    return float(np.mean(rmse)), float(np.mean(mae))


def heldout_scores(regression: bool, targets: list, predictions: list) -> dict[str, float]:
    """``{"value": ROC-AUC}`` for a classification set, ``{"value": RMSE, "mae": MAE}`` for a
    regression set: the same computation for Chemprop's and ddpx's held-out predictions."""
    if not regression:
        return {"value": roc_auc(targets, predictions)}
    rmse, mae = rmse_mae(targets, predictions)
    return {"value": rmse, "mae": mae}
