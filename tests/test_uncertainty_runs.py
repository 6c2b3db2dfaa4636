"""Uncertainty and calibration on real ranks (2 each), recorded in a real MLflow store: a
mean-variance run's held-out NLL is the NLL of its own predictions file; the conformal interval
of a regression covers 90 % of a large exchangeable held-out split; and the calibrator a run fitted
on its dev split is what ``ddpx predict`` applies, the z-scaled variances and their intervals, and
the Platt-scaled probabilities and their sets, equal to the saved calibration applied here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import TEST_RECIPES
from smiles_files import write_regression_csv, write_smiles_csv

from ddpx.records.calibration import Calibration, class_sets, intervals, sigmoid

pytestmark = pytest.mark.slow  # trains models

SMALL = ["model.num_layers=1", "model.d_model=32", "model.embedding_dim=32", "train.lr=0.01", "train.max_epochs=2"]
TARGETS = ["log S", "melting, point"]


def run_metrics(result, tracking_uri: str) -> tuple[dict, Path]:
    from mlflow.tracking import MlflowClient

    summary, run_dir = result.summary(), result.run_dirs()[0]
    run = MlflowClient(tracking_uri).get_run(summary["run_id"])
    assert run.info.status == "FINISHED"
    return run.data.metrics, run_dir


def gaussian_nll(rows: pd.DataFrame, target: str, mean: str, variance: str) -> float:
    """The mean Gaussian negative log-likelihood over the rows that hold the target, by hand."""
    kept = rows[rows[target].notna()]
    y, m, v = (kept[c].to_numpy(dtype=np.float64) for c in (target, mean, variance))
    return float(np.mean(0.5 * np.log(2 * math.pi * v) + (y - m) ** 2 / (2 * v)))


def answered_here(model_folder: Path, smiles: list[str]) -> tuple[np.ndarray, Calibration]:
    """The saved model's own outputs for ``smiles`` and its saved calibration, read here."""
    import torch

    from ddpx.api import load_model
    from ddpx.plugins.smiles.predict import model_outputs

    spec = json.loads((model_folder / "model.json").read_text())
    with torch.no_grad():
        raw = model_outputs(load_model(model_folder), spec["task_info"], smiles).double().numpy()
    return raw, Calibration.load(model_folder)


def test_an_mve_run_logs_the_nll_of_its_predictions_and_predict_applies_its_z_scaling(
    job_here, ddpx_here, tmp_path, tracking_uri
):
    path = write_regression_csv(tmp_path / "mols.csv", n=160)
    result = job_here(
        "smiles_csv_rnn",
        f"dataset.path={path}",
        'dataset.label_columns=["log S", "melting, point"]',
        "dataset.task_type=regression",
        "model.uncertainty=mve",
        "train.calibration=zscaling",
        *SMALL,
        tracking_uri=tracking_uri,
    )
    metrics, run_dir = run_metrics(result, tracking_uri)
    rows = pd.read_csv(run_dir / "reports" / "heldout_predictions.csv")
    assert len(rows) == result.summary()["heldout_samples"] == 16
    answered, own = [], []
    for name in TARGETS:
        t, m = f"target_{name}", f"prediction_{name}"
        answered.append(gaussian_nll(rows, t, m, f"calibrated_variance_{name}"))
        own.append(gaussian_nll(rows, t, m, f"variance_{name}"))
        assert metrics[f"heldout_nll/{name.replace(',', '_')}"] == pytest.approx(answered[-1], rel=1e-9)
    assert metrics["heldout_nll"] == pytest.approx(np.mean(answered), rel=1e-9)  # the mean over the two targets
    assert metrics["heldout_nll_uncalibrated"] == pytest.approx(np.mean(own), rel=1e-9)
    inside = [
        (rows[f"lower_{n}"] <= rows[f"target_{n}"]) & (rows[f"target_{n}"] <= rows[f"upper_{n}"]) for n in TARGETS
    ]
    held = [inside[j][rows[f"target_{n}"].notna()].mean() for j, n in enumerate(TARGETS)]
    assert metrics["heldout_coverage_90"] == pytest.approx(np.mean(held))
    assert (run_dir / "reports" / "heldout_error_vs_uncertainty.png").read_bytes()[:4] == b"\x89PNG"

    # ddpx predict: the z-scaled variance and its conformal interval, as the saved calibration gives them here
    asked = tmp_path / "asked.csv"
    smiles = pd.read_csv(path)["smiles"].tolist()[:12]
    pd.DataFrame({"smiles": smiles}).to_csv(asked, index=False)
    out = tmp_path / "answers.csv"
    predicted = ddpx_here("predict", str(run_dir / "model"), str(asked), "--coverage", "0.8", "-o", str(out))
    assert predicted.returncode == 0, predicted.output
    answers = pd.read_csv(out)
    raw, calibration = answered_here(run_dir / "model", smiles)
    assert calibration.method == "zscaling" and len(calibration.scores) == 2
    expected = calibration.answer(raw)
    lower, upper = intervals(calibration, expected, 0.8)
    for j, name in enumerate(TARGETS):
        assert answers[f"prediction_{name}"].to_numpy() == pytest.approx(raw[:, j, 0], rel=1e-6)
        assert answers[f"variance_{name}"].to_numpy() == pytest.approx(expected[:, j, 1], rel=1e-6)
        assert not np.allclose(expected[:, j, 1], raw[:, j, 1])  # the calibrator changed the variances
        assert answers[f"lower_{name}"].to_numpy() == pytest.approx(lower[:, j], rel=1e-6)
        assert answers[f"upper_{name}"].to_numpy() == pytest.approx(upper[:, j], rel=1e-6)


def test_conformal_intervals_cover_90_percent_of_an_exchangeable_heldout_split(job_here, tracking_uri):
    # one linear target with Gaussian noise: the dev and held-out samples are drawn alike (exchangeable)
    result = job_here(
        str(TEST_RECIPES / "tiny_regression.toml"),
        "dataset.targets=1",
        "dataset.dev_size=2000",
        "dataset.heldout_size=4000",
        "train.lr=0.3",
        "train.max_epochs=2",
        plugins=("ddpx_testplug_regression",),
        tracking_uri=tracking_uri,
    )
    metrics, run_dir = run_metrics(result, tracking_uri)
    assert abs(metrics["heldout_coverage_90"] - 0.9) <= 0.03
    rows = pd.read_csv(run_dir / "reports" / "heldout_predictions.csv")
    assert len(rows) == 4000
    inside = (rows["lower"] <= rows["target"]) & (rows["target"] <= rows["upper"])
    assert metrics["heldout_coverage_90"] == inside.mean()
    calibration = Calibration.load(run_dir / "model")
    q = sorted(calibration.scores[0])[math.ceil(2001 * 0.9) - 1]  # of the 2000 dev errors, the 1801st smallest
    assert (rows["upper"] - rows["prediction"]).to_numpy() == pytest.approx(np.full(4000, q))
    assert metrics["heldout_interval_width_90"] == pytest.approx(2 * q)


def test_predict_applies_the_platt_scaling_fitted_on_dev_and_answers_its_sets(
    job_here, ddpx_here, tmp_path, tracking_uri
):
    from sklearn.metrics import log_loss

    path = write_smiles_csv(tmp_path / "mols.csv", n=240)
    result = job_here(
        "smiles_csv_rnn",
        f"dataset.path={path}",
        "dataset.label_column=p_np",
        "train.calibration=platt",
        *SMALL,
        tracking_uri=tracking_uri,
    )
    metrics, run_dir = run_metrics(result, tracking_uri)
    rows = pd.read_csv(run_dir / "reports" / "heldout_predictions.csv", keep_default_na=False)
    calibrated = rows["calibrated_probability"].to_numpy(dtype=np.float64)
    assert metrics["heldout_nll"] == pytest.approx(log_loss(rows["target"], calibrated), rel=1e-9)
    assert metrics["heldout_nll_uncalibrated"] == pytest.approx(log_loss(rows["target"], rows["probability"]), rel=1e-9)
    gap = 0.0
    for b in range(10):  # the expected calibration error, bin by bin, from the file
        inside = (calibrated >= b / 10) & ((calibrated < (b + 1) / 10) | (b == 9))
        if inside.any():
            gap += inside.mean() * abs(rows["target"][inside].mean() - calibrated[inside].mean())
    assert metrics["heldout_ece"] == pytest.approx(gap, abs=1e-12)
    assert (run_dir / "reports" / "heldout_reliability.png").read_bytes()[:4] == b"\x89PNG"

    smiles = pd.read_csv(path)["smiles"].tolist()[:20]
    pd.DataFrame({"smiles": smiles}).to_csv(tmp_path / "asked.csv", index=False)
    out = tmp_path / "answers.csv"
    predicted = ddpx_here(
        "predict", str(run_dir / "model"), str(tmp_path / "asked.csv"), "--coverage", "0.9", "-o", str(out)
    )
    assert predicted.returncode == 0, predicted.output
    answers = pd.read_csv(out, keep_default_na=False)
    raw, calibration = answered_here(run_dir / "model", smiles)
    assert calibration.method == "platt" and calibration.fitted[0]["a"] != 1.0
    expected = calibration.answer(raw)
    assert answers["probability"].to_numpy() == pytest.approx(sigmoid(expected), rel=1e-9)
    assert not np.allclose(sigmoid(expected), sigmoid(raw))  # the calibrator changed the probabilities
    sets = class_sets(calibration, expected, 0.9)[:, 0, :]
    assert answers["set"].tolist() == ["|".join(c for c, held in zip("01", s) if held) for s in sets]
