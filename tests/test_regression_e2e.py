"""A minimised metric on real ranks: the synthetic regression task of the test plugin
``ddpx_testplug_regression`` (loss ``mse``, metric ``rmse``, lower is better) through a sweep on
2 ranks per trial and an Optuna search. Every place that picks or orders must keep the lowest
RMSE: the best epoch and early stopping, the held-out reports, the sweep's best trial, ``ddpx
runs``, the MLflow saved view, the study's direction, its best trial and its pruner."""

from __future__ import annotations

import csv
import json
import math
import types
from pathlib import Path

import pytest
import torch
from conftest import TEST_RECIPES
from ddpx_testplug_regression import build_data, build_model
from sklearn.metrics import mean_squared_error

REGRESSION = str(TEST_RECIPES / "tiny_regression.toml")
PLUGIN = ("ddpx_testplug_regression",)
VIEW_TAG = "mlflow.sharedViewState.ddpx-best-first"  # docs/mlflow.md


def heldout_here(run_dir) -> tuple[dict[str, float], int]:
    """Each target's RMSE over its present cells, from the run's predictions CSV, computed here;
    the CSV's targets and predictions checked against the split and the exported model first."""
    config = json.loads((run_dir / "job.json").read_text())["config"]
    data = build_data(types.SimpleNamespace(params=config["dataset"], seed=config["train"]["seed"]))
    inputs, targets = data.heldout.tensors
    model = build_model(config["model"], data.info)
    model.load_state_dict(torch.load(run_dir / "model" / "state_dict.pt", weights_only=True))
    with torch.no_grad():
        expected = model.eval()(inputs).reshape(len(inputs), -1)
    with (run_dir / "reports" / "heldout_predictions.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(row["index"]) for row in rows] == list(range(len(inputs)))  # every sample once, in order
    by_target = {}
    for j, name in enumerate(data.info["labels"]):
        true = [float(row[f"target_{name}"]) if row[f"target_{name}"] else math.nan for row in rows]
        predicted = [float(row[f"prediction_{name}"]) for row in rows]
        assert torch.equal(torch.tensor(true).isnan(), targets[:, j].isnan())
        assert torch.allclose(torch.tensor(predicted), expected[:, j], atol=1e-5)
        present = [i for i, t in enumerate(true) if t == t]
        by_target[name] = math.sqrt(mean_squared_error([true[i] for i in present], [predicted[i] for i in present]))
    return by_target, len(rows)


def check_selection(run_dir, summary: dict) -> list[float]:
    """best.pt and the summary hold the epoch of the lowest dev RMSE; an early stop came after
    ``train.patience`` epochs none of which was lower. Returns the dev RMSE of each epoch."""
    train = json.loads((run_dir / "job.json").read_text())["config"]["train"]
    dev = [json.loads(line)["dev_rmse"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    lowest = dev.index(min(dev)) + 1
    assert summary["best_epoch"] == lowest and summary["best_dev"] == min(dev), dev
    assert torch.load(run_dir / "checkpoints" / "best.pt", weights_only=True)["epoch"] == lowest
    assert summary["epochs_run"] == len(dev)
    if len(dev) < train["max_epochs"]:
        assert len(dev) == lowest + train["patience"] and all(value >= min(dev) for value in dev[lowest:]), dev
    return dev


@pytest.mark.slow
def test_a_sweep_on_2_ranks_keeps_the_lowest_rmse_everywhere(run_ddpx, ddpx_here, tracking_uri, experiment):
    from mlflow.tracking import MlflowClient

    # lr 0.3 fits in an epoch, then the dev RMSE wavers at the noise floor (patience 1 stops it);
    # 0.01 and 0.001 are still far off after 6 epochs. The best trial is the middle one: neither
    # the first nor the one a higher-is-better mistake would pick.
    result = run_ddpx(
        "sweep",
        REGRESSION,
        "train.lr=0.01,0.3,0.001",
        "train.max_epochs=6",
        "train.patience=1",
        "--nproc",
        "2",
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        plugins=PLUGIN,
        timeout=300,
    )
    assert result.returncode == 0, result.output
    client = MlflowClient(tracking_uri)
    experiment_id = client.get_experiment_by_name(experiment).experiment_id
    runs = {r.data.tags.get("ddpx.sweep.trial"): r for r in client.search_runs([experiment_id])}
    parent = runs.pop(None)
    best_dev, curves = {}, {}
    for number, run in runs.items():
        run_dir = Path(run.data.tags["ddpx.run_dir"])
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["metric"] == "rmse" and summary["greater_is_better"] is False
        assert run.data.tags["ddpx.metric_direction"] == "min"
        by_target, count = heldout_here(run_dir)
        assert count == summary["heldout_samples"] == 129
        assert summary["heldout"]["heldout_rmse"] == pytest.approx(sum(by_target.values()) / 2, rel=1e-6)
        assert summary["by_label"] == pytest.approx({f"heldout_rmse/{k}": v for k, v in by_target.items()}, rel=1e-6)
        assert run.data.metrics["heldout_rmse/y1"] == pytest.approx(by_target["y1"], rel=1e-6)
        curves[number] = check_selection(run_dir, summary)
        best_dev[number] = summary["best_dev"]
    stopped = [dev for dev in curves.values() if len(dev) < 6]
    assert stopped and all(1 < dev.index(min(dev)) + 1 < len(dev) for dev in stopped), curves  # fell, then rose

    best = min(best_dev, key=best_dev.get)
    assert best == "2" and max(best_dev, key=best_dev.get) == "3", best_dev
    assert parent.data.tags["ddpx.metric_direction"] == "min" and parent.data.metrics["best_trial"] == 2
    assert parent.data.metrics["best_dev_rmse"] == best_dev["2"] and parent.data.tags["ddpx.best.train.lr"] == "0.3"
    assert parent.data.metrics["best_heldout_rmse"] == runs["2"].data.metrics["heldout_rmse"]
    assert (
        f"* best trial on the dev metric (the lowest dev_rmse, {best_dev['2']:.4f}): 2 (train.lr=0.3)" in result.stdout
    )

    state = json.loads(json.loads(client.get_experiment(experiment_id).tags[VIEW_TAG])["state"])
    assert state["orderByKey"] == "metrics.`heldout_rmse`" and state["orderByAsc"] is True
    listed = ddpx_here("runs", "--tracking-uri", tracking_uri, "--experiment", experiment)
    assert listed.returncode == 0, listed.output
    assert "4 run(s), best first" in listed.stdout
    shown = [float(line.split("│")[1]) for line in listed.stdout.splitlines() if line.startswith("│")]
    heldout = sorted(run.data.metrics["heldout_rmse"] for run in runs.values())
    assert shown == sorted(shown) and shown[0] == round(heldout[0], 4) and shown[-1] == round(heldout[-1], 4)


@pytest.mark.slow
def test_an_optuna_search_minimises_the_rmse_and_prunes_the_high_ones(run_ddpx, tmp_path):
    import optuna

    storage = f"sqlite:///{tmp_path / 'study.db'}"
    # one target: targets and outputs (N,). Seed 9 draws lr 0.001, 0.3, 0.001; after epoch 1 lr
    # 0.001 is far above lr 0.3's RMSE. Once trials 1 and 2 have finished, the median pruner stops
    # a trial whose RMSE is above their median at epoch 1: trial 3 (maximising, it would go on).
    result = run_ddpx(
        "sweep",
        REGRESSION,
        "train.lr=choice(0.3,0.001)",
        "dataset.targets=1",
        "train.max_epochs=2",
        "--search",
        "optuna",
        "--trials",
        "3",
        "--sampler",
        "random",
        "--search-seed",
        "9",
        "--study-storage",
        storage,
        "--nproc",
        "1",
        "--tracking",
        "none",
        plugins=PLUGIN,
        timeout=300,
    )
    assert result.returncode == 0, result.output
    (summary,) = optuna.get_all_study_summaries(storage)
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    assert study.direction == optuna.study.StudyDirection.MINIMIZE
    trials = study.trials
    assert [t.params["train.lr"] for t in trials] == [0.001, 0.3, 0.001]
    assert [t.state.name for t in trials] == ["COMPLETE", "COMPLETE", "PRUNED"]
    first_epoch = [t.intermediate_values[1] for t in trials]
    assert first_epoch[2] > (first_epoch[0] + first_epoch[1]) / 2 > first_epoch[1]  # above the finished ones' median
    assert study.best_trial.number == 1 and study.best_value == min(trials[0].value, trials[1].value)
    assert "pruned trial 3 (train.lr=0.001)" in result.stdout and "stopped after epoch 1" in result.stdout
    assert f"(the lowest dev_rmse, {study.best_value:.4f}): 2 (train.lr=0.3)" in result.stdout
    run_dirs = [d for d in result.run_dirs() if d.is_dir() and (d / "summary.json").is_file()]
    pruned = [json.loads((d / "summary.json").read_text()) for d in run_dirs]
    assert sorted(s["pruned_after"] or 0 for s in pruned) == [0, 0, 1]
    with (run_dirs[0] / "reports" / "heldout_predictions.csv").open(newline="") as fh:
        assert next(csv.reader(fh)) == [
            "index",
            "target",
            "prediction",
            "lower",
            "upper",
        ]  # one target, its 90 % interval
