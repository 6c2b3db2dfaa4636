"""Regression and a user's own CSV (``smiles_csv``): targets standardised on the training split,
held-out RMSE exact on 2 ranks, answers in the file's units; wrong declarations refused before
anything starts; the regression MoleculeNet tasks read their published column names."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from smiles_files import TARGETS, target_values, write_regression_csv, write_smiles_csv

from ddpx.api import UserError
from ddpx.plugins.smiles.csv_table import read_smiles_csv
from ddpx.plugins.smiles.own_csv import _check, own_csv_task
from ddpx.plugins.smiles.params import smiles_params
from ddpx.plugins.smiles.scaling import Unscale, fit_scaler, standardised
from ddpx.plugins.smiles.splits import random_split
from ddpx.records.model_export import load_model

SMALL = ["model.num_layers=1", "model.d_model=32", "model.embedding_dim=32", "train.lr=0.01", "train.patience=0"]
TWO_TARGETS = 'dataset.label_columns=["log S", "melting, point"]'


def own_params(path, **changes) -> dict:
    """The smiles_csv task's dataset.* keys at their defaults, the file and ``changes`` set."""
    defaults = {name: param.default for name, param in own_csv_task(smiles_params, None).params.items()}
    return {**defaults, "path": str(path), **changes}


def test_the_scaler_standardises_present_cells_and_the_model_answers_in_file_units():
    rows = [(1.0, float("nan")), (3.0, 10.0), (5.0, 30.0)]
    scaler = fit_scaler(rows)
    assert scaler["mean"] == [3.0, 20.0] and scaler["std"] == pytest.approx([math.sqrt(8 / 3), 10.0])
    scaled = standardised(rows, scaler)
    assert scaled[1][0] == 0.0 and math.isnan(scaled[0][1]) and scaled[2][1] == 1.0
    unscale = Unscale(scaler["mean"], scaler["std"])
    import torch

    z = torch.tensor([[0.0, 1.0]])
    assert unscale.train()(z).tolist() == [[0.0, 1.0]]  # trains on standardised targets
    assert unscale.eval()(z).tolist() == [[3.0, 30.0]]  # answers in the file's units


@pytest.mark.parametrize("uncertainty", ["mve", "evidential"])
def test_the_bilstm_with_a_variance_head_answers_a_mean_and_a_variance_per_target(uncertainty):
    import torch

    from ddpx.plugins.smiles.model import build_smiles_rnn
    from ddpx.plugins.smiles.params import MODEL_PARAMS

    scaler = {"mean": [3.0, -1.0], "std": [2.0, 0.5]}
    info = {"vocab": ["<pad>", "<unk>", "C", "O"], "pad_id": 0, "labels": ["a", "b"], "target_scaler": scaler}
    defaults = {k: p.default for k, p in MODEL_PARAMS.items()}
    params = {**defaults, "d_model": 8, "embedding_dim": 8, "dropout": 0.0, "uncertainty": uncertainty}
    model = build_smiles_rnn(params, info).train()
    inputs = (torch.tensor([[2, 3, 2], [3, 2, 0]]), torch.tensor([3, 2]))
    standardised = model(inputs).detach()
    variance = standardised[..., 1]
    if uncertainty == "evidential":  # (mean, v, alpha, beta) while training; the total variance answered
        assert standardised.shape == (2, 2, 4) and (standardised[..., 2] > 1).all()
        variance = (1 + 1 / standardised[..., 1]) * standardised[..., 3] / (standardised[..., 2] - 1)
    assert standardised.shape[:2] == (2, 2) and (variance > 0).all()  # (molecule, target, ...)
    with torch.no_grad():
        answered = model.eval()(inputs)
    std, mean = torch.tensor(scaler["std"]), torch.tensor(scaler["mean"])
    assert torch.allclose(answered[..., 0], standardised[..., 0] * std + mean, atol=1e-5)
    assert torch.allclose(answered[..., 1], variance * std**2, rtol=1e-5)
    one = build_smiles_rnn(params, {**info, "labels": ["a"], "target_scaler": {"mean": [3.0], "std": [2.0]}})
    assert one.eval()(inputs).shape == (2, 2)  # one target: (molecule, mean/variance)


def test_regression_file_reads_numbers_with_gaps(tmp_path):
    path = write_regression_csv(tmp_path / "mols.csv", n=24)
    table = read_smiles_csv(path, "smiles", TARGETS, strict=True, regression=True)
    assert len(table.labels) == 24 and table.regression
    assert table.labels[1][0] == pytest.approx(target_values(table.smiles[1])[0], abs=1e-3)
    assert sum(math.isnan(row[1]) for row in table.labels) == 4  # every sixth cell of the second column


def test_wrong_declarations_are_refused_before_launch(tmp_path):
    regression = write_regression_csv(tmp_path / "measured.csv", n=30, targets=["log S"])
    with pytest.raises(
        UserError,
        match=r"numbers other than 0 and 1 .*"
        r"dataset.task_type=regression",
    ):
        _check(own_params(regression, label_column="log S"))
    classes = write_smiles_csv(tmp_path / "classes.csv", n=30)
    with pytest.raises(
        UserError,
        match=r"task_type=regression, but column 'p_np' .* only 0 and 1.*"
        r"Set dataset.task_type=classification",
    ):
        _check(own_params(classes, label_column="p_np", task_type="regression"))
    with pytest.raises(UserError, match="needs the column"):
        _check(own_params(classes))
    _check(own_params(classes, label_column="p_np"))  # the right declarations pass
    _check(own_params(regression, label_column="log S", task_type="regression"))


def heldout_rmse_here(path, model_folder) -> tuple[float, np.ndarray, list[str]]:
    """The recipe's held-out split of the file, the exported model's predictions, the mean RMSE
    over the two targets (each over its present cells), computed here in one process."""
    from ddpx.plugins.smiles.predict import predict_table

    table = read_smiles_csv(path, "smiles", TARGETS, strict=True, regression=True)
    _, _, heldout = random_split(table.labels, 0, 0.1, 0.2, stratify=False)
    smiles = [table.smiles[i] for i in heldout]
    model = load_model(model_folder)
    import json

    info = json.loads((model_folder / "model.json").read_text())["task_info"]
    answers = predict_table(model, info, pd.DataFrame({"smiles": smiles}))
    predicted = answers[[f"prediction_{t}" for t in TARGETS]].to_numpy()
    targets = np.array([table.labels[i] for i in heldout])
    per_target = [
        math.sqrt(np.mean((predicted[~np.isnan(targets[:, j]), j] - targets[~np.isnan(targets[:, j]), j]) ** 2))
        for j in range(2)
    ]
    return float(np.mean(per_target)), predicted, smiles


@pytest.mark.slow
def test_own_csv_regression_on_2_ranks_is_exact_and_answers_in_file_units(job_here, ddpx_here, tmp_path):
    path = write_regression_csv(tmp_path / "mols.csv", n=120)
    trained = job_here(
        "smiles_csv_rnn",
        f"dataset.path={path}",
        TWO_TARGETS,
        "dataset.task_type=regression",
        "train.max_epochs=3",
        *SMALL,
    )
    summary, run_dir = trained.summary(), trained.run_dirs()[0]
    assert summary["metric"] == "rmse" and summary["greater_is_better"] is False
    expected, predicted, smiles = heldout_rmse_here(path, run_dir / "model")
    assert summary["heldout_samples"] == len(smiles) == 12
    assert summary["heldout"]["heldout_rmse"] == pytest.approx(expected, rel=1e-5)
    assert 100 < predicted[:, 1].mean() < 200  # melting points in the file's units, not standardised ones
    asked = tmp_path / "asked.csv"
    pd.DataFrame({"smiles": smiles}).to_csv(asked, index=False)
    answered = ddpx_here("predict", str(run_dir / "model"), str(asked), "--output", str(tmp_path / "answers.csv"))
    assert answered.returncode == 0, answered.output
    by_cli = pd.read_csv(tmp_path / "answers.csv")
    assert list(by_cli.columns) == ["smiles", *(f"prediction_{t}" for t in TARGETS)]
    assert np.allclose(by_cli[[f"prediction_{t}" for t in TARGETS]].to_numpy(), predicted, atol=1e-4)


def test_regression_moleculenet_tasks_read_their_published_columns(tmp_path):
    from real_data import ESOL, esol_candidates, where_looked

    from ddpx.config.recipe import resolve_recipe
    from ddpx.plugin_host.registry import load_registry

    registry = load_registry()
    sampl = tmp_path / "SAMPL.csv"  # FreeSolv's published columns: iupac,smiles,expt,calc
    sampl.write_text(
        "iupac,smiles,expt,calc\n"
        + "".join(
            f"molecule {i},{'C' * (i % 5 + 1)}O,{-1.5 - 0.3 * (i % 5):.2f},{-1.4 - 0.3 * (i % 5):.2f}\n"
            for i in range(40)
        )
    )
    recipe = resolve_recipe(registry, "freesolv_rnn", [f"dataset.path={sampl}"])
    assert (recipe.task.loss, recipe.task.metric) == ("mse", "rmse")
    recipe.task.check(recipe.config["dataset"])
    if ESOL is None:
        pytest.skip(f"no published ESOL file at {where_looked(esol_candidates())} (CI has ../shared/data)")
    params = resolve_recipe(registry, "esol_rnn", [f"dataset.path={ESOL}"]).config["dataset"]
    table = read_smiles_csv(ESOL, params["smiles_column"], [params["label_column"]], strict=True, regression=True)
    assert len(table.labels) == 1128 and min(table.labels) == pytest.approx(-11.6)  # trailing spaces read too
