"""Regression: the ``mse`` loss and the ``rmse``, ``mae`` and ``r2`` metrics against scikit-learn
on targets with missing (NaN) cells, their directions, the per-target values, the held-out
reports, and model selection that keeps the lowest RMSE."""

from __future__ import annotations

import csv
import math
import types

import numpy as np
import pytest
import torch
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

from ddpx.plugin_host.registry import load_registry
from ddpx.plugins.metrics import mae, r2, rmse
from ddpx.rank.loop.epochs import is_better
from ddpx.rank.loop.evaluation import Predictions, per_label_metrics
from ddpx.rank.loop.losses import loss_function
from ddpx.records.reports import heldout_reports

SKLEARN = {"rmse": lambda t, o: math.sqrt(mean_squared_error(t, o)), "mae": mean_absolute_error, "r2": r2_score}
OURS = {"rmse": rmse, "mae": mae, "r2": r2}


def with_gaps(n: int = 300, targets: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Targets ``(n, targets)`` with about a fifth of the cells missing (NaN), and noisy outputs."""
    rng = np.random.default_rng(seed)
    true = rng.normal(2.0, 1.5, size=(n, targets))
    outputs = (true + rng.normal(0, 0.7, size=true.shape)).astype(np.float32)
    true[rng.random(true.shape) < 0.2] = np.nan
    return true.astype(np.float32), outputs


@pytest.mark.parametrize("name", ["rmse", "mae", "r2"])
def test_each_targets_value_over_its_present_cells_averaged_equals_scikit_learns(name):
    targets, outputs = with_gaps()
    present = [~np.isnan(targets[:, j]) for j in range(targets.shape[1])]
    expected = np.mean([SKLEARN[name](targets[p, j], outputs[p, j]) for j, p in enumerate(present)])
    assert OURS[name](targets, outputs) == pytest.approx(expected, rel=1e-6)
    one = targets[present[0], 0]  # one target: (N,) targets, outputs (N,) or (N, 1)
    single = SKLEARN[name](one, outputs[present[0], 0])
    assert OURS[name](one, outputs[present[0], 0]) == pytest.approx(single, rel=1e-6)
    assert OURS[name](one, outputs[present[0], :1]) == pytest.approx(single, rel=1e-6)


def test_errors_are_minimised_and_r2_maximised():
    metrics = load_registry().all("metrics")
    assert {name: metrics[name].greater_is_better for name in ("rmse", "mae", "r2", "roc_auc")} == {
        "rmse": False,
        "mae": False,
        "r2": True,
        "roc_auc": True,
    }


def test_per_target_values_are_logged_like_per_label_roc_aucs():
    targets, outputs = with_gaps(targets=2)
    targets[1:, 1], targets[0, 1] = np.nan, 2.5  # one value left: R² cannot score it, RMSE can
    predictions = Predictions(torch.from_numpy(outputs), torch.from_numpy(targets))
    metrics = load_registry().all("metrics")
    by_target = per_label_metrics(predictions, metrics["rmse"], ["log S", "m.p. (°C)"], "heldout")
    present = ~np.isnan(targets[:, 0])
    assert by_target == {
        "heldout_rmse/log S": pytest.approx(SKLEARN["rmse"](targets[present, 0], outputs[present, 0])),
        "heldout_rmse/m.p. __C_": pytest.approx(abs(outputs[0, 1] - targets[0, 1])),
    }
    assert list(per_label_metrics(predictions, metrics["r2"], ["a", "b"], "dev")) == ["dev_r2/a"]


def test_mse_is_the_mean_over_present_cells_and_missing_cells_get_no_gradient():
    targets, outputs = (torch.from_numpy(a) for a in with_gaps(n=40))
    outputs.requires_grad_(True)
    loss = loss_function("mse")(outputs, targets)
    present = ~torch.isnan(targets)
    assert loss.item() == pytest.approx(((outputs - targets)[present] ** 2).mean().item(), rel=1e-6)
    loss.backward()
    assert torch.isfinite(outputs.grad).all() and (outputs.grad[~present] == 0).all()
    assert (outputs.grad[present] != 0).all()
    column, flat = targets[:, 0].nan_to_num(1.0), outputs.detach()[:, 0]
    expected = torch.nn.functional.mse_loss(flat, column)
    for shaped in (flat, flat.reshape(-1, 1)):  # one target: outputs (N,) or (N, 1), targets (N,) or (N, 1)
        assert loss_function("mse")(shaped, column).item() == pytest.approx(expected.item())
        assert loss_function("mse")(shaped, column.reshape(-1, 1)).item() == pytest.approx(expected.item())


def test_model_selection_keeps_the_lowest_of_a_minimised_metric():
    minimised = load_registry().get("metrics", "rmse")
    assert is_better(0.5, 9.0, (0.6, 0.1), minimised) and not is_better(0.7, 0.0, (0.6, 0.1), minimised)
    assert is_better(0.6, 0.05, (0.6, 0.1), minimised)  # a tie: the lower dev loss
    assert not is_better(float("nan"), 0.0, (0.6, 0.1), minimised)


@pytest.mark.parametrize("targets_count", [1, 2])
def test_heldout_reports_of_a_regression_are_a_scatter_and_the_predictions(tmp_path, targets_count):
    targets, outputs = with_gaps(n=50, targets=targets_count)
    if targets_count == 1:
        targets, outputs = np.nan_to_num(targets[:, 0], nan=1.0), outputs[:, 0]
    predictions = types.SimpleNamespace(outputs=torch.from_numpy(outputs), targets=torch.from_numpy(targets))
    names = ["y0", "y1"][:targets_count]
    files = heldout_reports(predictions, "mse", {"labels": names}, tmp_path)
    assert [f.name for f in files] == ["heldout_predicted_vs_true.png", "heldout_predictions.csv"]
    assert files[0].stat().st_size > 0
    with files[1].open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 50
    columns = [("target", "prediction")] if targets_count == 1 else [(f"target_{n}", f"prediction_{n}") for n in names]
    grid = targets.reshape(50, -1)
    for j, (target, prediction) in enumerate(columns):
        read = np.array([float(row[target]) if row[target] else np.nan for row in rows])
        assert np.array_equal(np.isnan(read), np.isnan(grid[:, j]))  # a missing target is an empty cell
        assert np.allclose(read[~np.isnan(read)], grid[~np.isnan(grid[:, j]), j])
        assert np.array_equal([float(row[prediction]) for row in rows], outputs.reshape(50, -1)[:, j])


def test_runs_of_one_recipe_judged_two_ways_are_listed_per_metric_each_best_first(tmp_path, new_store):
    """A recipe whose task is judged by its dataset keys (one's own CSV: ROC-AUC or RMSE) gets a
    table per metric in ``ddpx runs``: the highest ROC-AUC first, the lowest RMSE first."""
    from mlflow.tracking import MlflowClient

    from ddpx.plugins.trackers.mlflow.runs import list_runs

    uri = new_store
    client = MlflowClient(uri)
    experiment = client.create_experiment("smiles_csv_rnn")
    for metric, value in [
        ("heldout_roc_auc", 0.81),
        ("heldout_rmse", 0.9),
        ("heldout_roc_auc", 0.93),
        ("heldout_rmse", 0.4),
        ("heldout_rmse", 1.3),
    ]:
        direction = "min" if metric == "heldout_rmse" else "max"
        run = client.create_run(
            experiment,
            tags={"ddpx.recipe": "smiles_csv_rnn", "ddpx.metric": metric, "ddpx.metric_direction": direction},
        )
        client.log_metric(run.info.run_id, metric, value)
        client.set_terminated(run.info.run_id)
    listed = {group.metric: [row.score for row in group.rows] for group in list_runs(uri).groups}
    assert listed == {"heldout_rmse": [0.4, 0.9, 1.3], "heldout_roc_auc": [0.93, 0.81]}
