"""``benchmarks/moleculenet_quality/run.py --best-of``: the model a user would pick per set is the one
with the better mean *dev* metric, in the metric's direction, never the better held-out value."""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.metrics import roc_auc_score
from smiles_files import predictions_file

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "moleculenet_quality" / "run.py"


def seed_rows(set_name: str, recipe: str, metric: str, greater: bool, pairs, overrides=()) -> list[dict]:
    return [
        {
            "set": set_name,
            "recipe": recipe,
            "family": recipe.rsplit("_", 1)[1],
            "overrides": list(overrides),
            "seed": seed,
            "metric": metric,
            "greater_is_better": greater,
            "value": heldout,
            "dev": dev,
            "wall_s": 1.0,
        }
        for seed, (heldout, dev) in enumerate(pairs)
    ]


def best_of(tmp_path: Path, rows: list[dict]) -> list[str]:
    record = tmp_path / "results.jsonl"
    record.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--best-of", str(record)], capture_output=True, text=True, check=True
    )
    lines = result.stdout.splitlines()
    return [line for line in lines if line.startswith("| ") and not line.startswith(("| set", "| ---"))]


def test_the_better_dev_mean_chooses_in_the_metrics_direction(tmp_path):
    rows = [
        # BACE: the BiLSTM has the better held-out value, the graph model the better dev value
        *seed_rows("bace", "bace_rnn", "roc_auc", True, [(0.84, 0.70), (0.82, 0.71)]),
        *seed_rows("bace", "bace_dmpnn", "roc_auc", True, [(0.80, 0.73), (0.79, 0.74)]),
        # ESOL: RMSE, lower is better; with descriptors the graph model has the lower dev RMSE
        *seed_rows("esol", "esol_dmpnn", "rmse", False, [(0.95, 1.10), (0.97, 1.00)]),
        *seed_rows(
            "esol",
            "esol_dmpnn",
            "rmse",
            False,
            [(1.20, 0.90), (1.10, 0.92)],
            overrides=["dataset.molecule_features=v1_rdkit_2d_normalized"],
        ),
    ]
    bace, esol = best_of(tmp_path, rows)
    cells = [c.strip() for c in bace.split("|")[1:-1]]
    assert cells[2] == "bace_dmpnn" and cells[3].startswith("0.7950") and cells[4] == "0 1"
    assert cells[-1] == "no"  # 0.795 is below the published D-MPNN's 0.809
    cells = [c.strip() for c in esol.split("|")[1:-1]]
    assert cells[2] == "esol_dmpnn dataset.molecule_features=v1_rdkit_2d_normalized" and cells[3].startswith("1.1500")
    assert cells[-1] == "no"  # an RMSE of 1.15 is above (worse than) the published 1.050
    assert "esol_dmpnn: 0.9600 (1.0500)" in cells[6]


def quality_module():
    """The benchmark's predictions module (its held-out predictions read, scored and ensembled)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module("benchmarks.moleculenet_quality.predictions")


def test_the_ensemble_averages_each_molecules_probabilities_over_the_seeds(tmp_path):
    quality = quality_module()
    header = ["target_A", "probability_A", "target_B", "probability_B"]
    seed0 = [[1, 0.9, 0, 0.2], [0, 0.6, "", 0.5], [1, 0.4, 1, 0.7], [0, 0.1, 0, 0.6]]
    seed1 = [[1, 0.5, 0, 0.4], [0, 0.2, "", 0.9], [1, 0.7, 1, 0.3], [0, 0.8, 0, 0.1]]
    tables = [
        quality.heldout_predictions(predictions_file(tmp_path / f"{i}.csv", header, rows))
        for i, rows in enumerate([seed0, seed1])
    ]
    assert math.isnan(tables[0]["target_B"][1])  # an empty cell is a missing label
    rows = [
        {"seed": i, "metric": "roc_auc", "value": quality.metric_of(t, "roc_auc"), "predictions": t}
        for i, t in enumerate(tables)
    ]
    # seed 0: A 0.75, B 1.0 (its missing molecule left out); seed 1: A 0.5, B 0.5
    assert [r["value"] for r in rows] == [0.875, 0.5]
    # averaged: A (0.7, 0.4, 0.55, 0.45) gives 1.0; B (0.3, 0.5, 0.35) gives 1.0
    assert quality.ensemble_value(rows) == 1.0
    rows[1]["value"] = 0.7  # a predictions file that does not give its run's value: no ensemble
    assert quality.ensemble_value(rows) is None


def test_a_file_with_logits_is_checked_on_them_and_averaged_on_exact_probabilities(tmp_path):
    """Files written before the probabilities were float64 hold float32 ones, 1.0 (or one step
    below) from a logit of about 17 on: the seed's check ranks its logits, and the ensemble averages
    the probabilities computed from them (the saturated ones tie)."""
    import numpy as np
    import torch

    quality = quality_module()
    targets = [1, 0, 1, 0]
    logits = [[17.0, 17.0, 18.0, -3.0], [18.0, 17.0, 17.0, 1.0]]  # each seed 0.875 (one tie)
    float32 = [torch.sigmoid(torch.tensor(seed)).tolist() for seed in logits]
    tables = [
        quality.heldout_predictions(
            predictions_file(
                tmp_path / f"{i}.csv",
                ["target_A", "logit_A", "probability_A"],
                [list(row) for row in zip(targets, seed, probability)],
            )
        )
        for i, (seed, probability) in enumerate(zip(logits, float32))
    ]
    assert [quality.metric_of(t, "roc_auc") for t in tables] == [0.875, 0.875]
    rows = [{"seed": i, "metric": "roc_auc", "value": 0.875, "predictions": t} for i, t in enumerate(tables)]
    saturated = roc_auc_score(targets, np.mean(float32, axis=0))
    assert quality.ensemble_value(rows) == 1.0 != saturated  # 18 and 17 apart in float64; tied in float32


def test_the_ensemble_of_a_regression_averages_the_predicted_values(tmp_path):
    quality = quality_module()
    header = ["target", "prediction"]
    tables = [
        quality.heldout_predictions(predictions_file(tmp_path / f"{i}.csv", header, rows))
        for i, rows in enumerate([[[1.0, 2.0], [3.0, 2.0]], [[1.0, 0.0], [3.0, 4.0]]])
    ]
    rows = [
        {"seed": i, "metric": "rmse", "value": quality.metric_of(t, "rmse"), "predictions": t}
        for i, t in enumerate(tables)
    ]
    assert [r["value"] for r in rows] == [1.0, 1.0]
    assert quality.ensemble_value(rows) == 0.0  # the two seeds' errors cancel
    assert quality.ensemble_value(rows[:1]) is None  # one seed is no ensemble


def test_best_of_ensembles_each_familys_best_model_by_dev(tmp_path):
    """The families' ensemble averages the best-by-dev model of each family, from the predictions
    files ``--record`` keeps beside the record; an older line of the same model and seed gives way."""
    header = ["target", "probability"]
    targets = [1, 0, 1, 0]
    files = {
        "rnn": [0.9, 0.2, 0.3, 0.4],  # held-out 0.75
        "dmpnn": [0.5, 0.6, 0.8, 0.1],  # 0.75
        "dmpnn_worse": [0.1, 0.9, 0.2, 0.8],  # 0.0, but the worse dev of its family: never in the ensemble
    }
    rows = []
    for key, scores in files.items():
        predictions_file(tmp_path / f"{key}.csv", header, [[t, p] for t, p in zip(targets, scores)])
        recipe = "bbbp_rnn" if key == "rnn" else "bbbp_dmpnn"
        overrides = ["model.depth=2"] if key == "dmpnn_worse" else []
        dev = {"rnn": 0.80, "dmpnn": 0.90, "dmpnn_worse": 0.70}[key]
        (row,) = seed_rows("bbbp", recipe, "roc_auc", True, [(0.75 if key != "dmpnn_worse" else 0.0, dev)], overrides)
        rows.append({**row, "predictions_file": f"{key}.csv"})
    stale = {**rows[1], "value": 0.5, "dev": 0.1}  # the same model and seed recorded earlier
    (bbbp,) = best_of(tmp_path, [stale, *rows])
    cells = [c.strip() for c in bbbp.split("|")[1:-1]]
    assert cells[2] == "bbbp_dmpnn" and cells[3] == "0.7500"  # the later line's dev (0.90) chooses it
    # averaged: (0.7, 0.4, 0.55, 0.25): both positives above both negatives
    assert cells[7] == "1.0000 (bbbp_dmpnn + bbbp_rnn)"


def test_the_tables_name_the_cpu_kernels_the_ranks_inherit():
    """The header of every table names torch's CPU kernel set, read under the environment the
    ranks inherit: ATEN_CPU_CAPABILITY, which changes a seed's digits, changes it."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
        "from benchmarks.moleculenet_quality.seeds import arithmetic_text; print(arithmetic_text())"
    )
    from benchmarks.moleculenet_quality.seeds import arithmetic_text

    plain = arithmetic_text()  # this process's, whose torch loaded without ATEN_CPU_CAPABILITY
    assert plain.startswith("torch 2.") and ", CPU kernels " in plain
    chosen = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "ATEN_CPU_CAPABILITY": "default"},
    ).stdout
    assert chosen.strip().endswith("CPU kernels DEFAULT")


@pytest.mark.slow  # starts a rank
def test_one_recipe_runs_through_the_cli_without_mlflow(tmp_path):
    from smiles_files import write_smiles_csv

    data = write_smiles_csv(tmp_path / "mols.csv", n=200)
    absent = tmp_path / "no-mlflow" / "mlflow"  # as on a GPU machine without it: importing it fails
    absent.mkdir(parents=True)
    (absent / "__init__.py").write_text("raise ImportError('MLflow is not installed here')\n")
    path = os.pathsep.join([str(absent.parent), os.environ.get("PYTHONPATH", "")])
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "bbbp_rnn",
            "--data",
            str(data),
            "--seeds",
            "0",
            "--nproc",
            "1",
            "--launcher",
            "spawn",
            "--tracking",
            "none",
            "--split",
            "random",
            "train.max_epochs=1",
            "model.num_layers=1",
            "model.d_model=16",
            "model.embedding_dim=16",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split(" | ") for line in result.stdout.splitlines() if line.startswith("| 0 |")]
    assert len(rows) == 1 and 0 <= float(rows[0][1]) <= 1 and rows[0][4] == "20", result.stdout  # 10 % held out
