"""Ensembles (``train.ensemble_size``): members that differ by seed, trained one after another on
every rank, recorded as one MLflow run and exported as one model that answers with the members'
mean and their spread. On real ranks: a 3-member BiLSTM classifier on 2 ranks whose held-out
predictions file, ``ddpx predict`` (its model folder and its MLflow run) and metrics are its
members' — each read here from its own ``best.pt`` — averaged in this process; a 2-member features
regression model whose mean and spread are in the file's units, whose spread squared is its
variance, z-scaled on dev and answered by ``ddpx predict --coverage`` as a variance head's is; a
2-member ensemble of variance heads that answers their total variance. A bad ensemble size is
refused before anything starts, and z-scaling of a model without a variance before launch."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from smiles_files import TARGETS, target_values, write_smiles_csv

from ddpx.records.ensemble import answer, combine

SMALL_RNN = [
    "model.num_layers=1",
    "model.d_model=32",
    "model.embedding_dim=32",
    "train.lr=0.01",
    "train.max_epochs=2",
    "train.patience=0",
]


def members_answers(run_dir, size: int, smiles: list[str]) -> list[pd.DataFrame]:
    """Each member's answers for ``smiles``, from its own ``best.pt``, through its task's predictor."""
    from ddpx.api import load_checkpoint, model_state_from
    from ddpx.plugin_host.registry import load_registry

    registry = load_registry()
    answers = []
    for i in range(size):
        saved = load_checkpoint(run_dir / "checkpoints" / f"member_{i}" / "best.pt")
        params = {k: v for k, v in saved["recipe"]["model"].items() if k != "name"}
        model = registry.get("models", saved["recipe"]["model"]["name"]).build(params, saved["task_info"])
        model.load_state_dict(model_state_from(saved))
        task = registry.get("tasks", saved["recipe"]["task"])
        with torch.no_grad():
            answers.append(task.predictor.predict(model.eval(), saved["task_info"], pd.DataFrame({"smiles": smiles})))
    return answers


def write_parsable_regression_csv(path, n: int):
    """Molecules RDKit parses (every one keeps its place in the splits), with the two measured
    targets of ``smiles_files``, all present."""
    from test_dmpnn import valid_molecule

    rng = random.Random(0)
    lines = ["smiles," + ",".join(f'"{name}"' for name in TARGETS)]
    for i in range(n):
        smiles = valid_molecule(rng, i % 2 == 0)
        lines.append(f"{smiles},{','.join(f'{v:.3f}' for v in target_values(smiles))}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def continued(recipe: str, overrides: list[str], checkpoint, workdir) -> dict:
    """The recipe run on 2 ranks from ``checkpoint`` (``--resume PATH``) in a new run folder; its summary."""
    from dataclasses import asdict

    from ddpx.config.recipe import resolve_recipe
    from ddpx.contract.launch_settings import LaunchSettings
    from ddpx.launch.plan import plan_job
    from ddpx.launch.run import run_job
    from ddpx.plugin_host.registry import load_registry

    registry = load_registry()
    recipe = resolve_recipe(registry, recipe, overrides)
    settings = LaunchSettings(
        nproc=2, backend="gloo", tracking="none", runs_dir=str(workdir / "ddpx-runs"), resume=str(checkpoint)
    )
    return asdict(run_job(registry, recipe, plan_job(registry, recipe, settings)))


def heldout_molecules(path, labels, regression: bool = False, split: str = "heldout") -> tuple[list[str], list]:
    """The recipe's held-out (or ``dev``) split of the file (train.seed 0), in order: SMILES and labels."""
    from ddpx.plugins.smiles.csv_table import read_smiles_csv
    from ddpx.plugins.smiles.splits import random_split

    table = read_smiles_csv(path, "smiles", labels, strict=True, regression=regression)
    _, dev, heldout = random_split(table.labels, 0, 0.1, 0.2, stratify=not regression)
    chosen = heldout if split == "heldout" else dev
    return [table.smiles[i] for i in chosen], [table.labels[i] for i in chosen]


def members_mean_and_variance(run_dir, smiles: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """A 2-member regression ensemble's mean and spread squared over ``smiles``, ``(N, T)`` each,
    from its members' own answers (each from its ``best.pt``)."""
    answers = [a[[f"prediction_{t}" for t in TARGETS]].to_numpy() for a in members_answers(run_dir, 2, smiles)]
    return np.mean(answers, 0), np.var(answers, 0)


def gaussian_nll(targets: np.ndarray, mean: np.ndarray, variance: np.ndarray) -> float:
    """The mean over the targets (columns) of each one's Gaussian NLL over the cells that hold it."""
    cells = 0.5 * np.log(2 * np.pi * variance) + (targets - mean) ** 2 / (2 * variance)
    return float(np.mean(np.nanmean(cells, 0)))


def test_the_mean_keeps_each_losss_output_form_and_the_spread_is_across_members():
    torch.manual_seed(0)
    logits = torch.randn(3, 8) * 30  # confident members: a mean probability of 1.0 would be an infinite logit
    mean, spread = combine(logits, "bce_with_logits")
    probabilities = torch.sigmoid(logits.double())
    assert torch.isfinite(mean).all() and torch.allclose(torch.sigmoid(mean), probabilities.mean(0))
    assert torch.allclose(spread, torch.from_numpy(probabilities.numpy().std(0)))  # over the members, ddof 0
    classes = torch.randn(4, 6, 5)
    mean, spread = combine(classes, "cross_entropy")
    probabilities = torch.softmax(classes.double(), -1)
    assert torch.allclose(torch.softmax(mean, -1), probabilities.mean(0))
    chosen = probabilities.mean(0).argmax(-1)
    assert torch.allclose(spread, probabilities[:, torch.arange(6), chosen].std(0, correction=0))
    values = torch.randn(2, 7, 3)
    mean, spread = combine(values, "mse")
    assert torch.allclose(mean, values.double().mean(0))
    assert torch.allclose(spread, (values[0] - values[1]).double().abs() / 2)  # two members: half their distance
    assert torch.equal(answer(mean, spread, "mse"), torch.stack([mean, spread**2], -1))  # a variance head's layout


def test_members_with_a_variance_head_answer_their_mean_and_total_variance():
    torch.manual_seed(0)
    means, variances = torch.randn(3, 7, 2).double(), torch.rand(3, 7, 2).double()
    combined, spread = combine(torch.stack([means, variances], -1), "gaussian_nll")
    m = means.numpy()
    assert np.allclose(combined[..., 0], m.mean(0)) and np.allclose(spread, m.std(0))
    assert np.allclose(combined[..., 1], variances.numpy().mean(0) + m.var(0))  # the law of total variance
    assert torch.equal(answer(combined, spread, "gaussian_nll"), combined)  # already a variance head's answer


def test_z_scaling_needs_a_variance_which_a_regression_ensemble_answers():
    from ddpx.api import UserError
    from ddpx.config.recipe import resolve_recipe
    from ddpx.plugin_host.registry import load_registry

    registry, zscaling = load_registry(), ["train.calibration=zscaling"]
    resolve_recipe(registry, "freesolv_rnn", [*zscaling, "train.ensemble_size=2"])  # its spread squared
    resolve_recipe(registry, "freesolv_rnn", [*zscaling, "model.uncertainty=mve"])  # a variance head
    with pytest.raises(UserError, match="loss 'mse' trains a model that predicts none") as refused:
        resolve_recipe(registry, "freesolv_rnn", zscaling)  # one plain regression model
    assert "train.ensemble_size=5" in str(refused.value)


@pytest.mark.parametrize("value", ["0", "-2", "2.5", "three"])
def test_a_bad_ensemble_size_is_refused_before_launch(ddpx_here, tmp_path, value):
    refused = ddpx_here("recipe", "mlp_synthetic", "--nproc", "2", f"train.ensemble_size={value}")
    assert refused.returncode == 2, refused.output
    assert "'train.ensemble_size' must be" in refused.stderr and "Traceback" not in refused.output
    assert not (tmp_path / "ddpx-runs").exists() and not (tmp_path / "mlflow.db").exists()  # nothing started


def test_an_ensemble_of_a_loss_it_cannot_average_is_refused_before_launch():
    from dataclasses import replace

    from ddpx.api import UserError
    from ddpx.config.recipe import resolve_recipe
    from ddpx.launch.plan import check_ensemble
    from ddpx.plugin_host.registry import load_registry

    recipe = resolve_recipe(load_registry(), "mlp_synthetic", ["train.ensemble_size=2"])
    check_ensemble(recipe)  # cross_entropy: averaged
    check_ensemble(replace(recipe, task=replace(recipe.task, loss="gaussian_nll")))  # a variance head: combined
    other = replace(recipe, task=replace(recipe.task, loss="poisson_nll"))  # a plugin's loss of another form
    with pytest.raises(UserError, match=r"task 'mlp_synthetic' trains with 'poisson_nll'\. Set train.ensemble_size=1"):
        check_ensemble(other)
    other.config["train"]["ensemble_size"] = 1
    check_ensemble(other)  # one model: nothing to average


@pytest.mark.slow
def test_three_members_on_two_ranks_answer_as_their_members_mean(job_here, ddpx_here, tmp_path, new_store):
    from mlflow.tracking import MlflowClient
    from sklearn.metrics import roc_auc_score

    molecules = write_smiles_csv(tmp_path / "molecules.csv", n=120)
    recipe = [f"dataset.path={molecules}", "dataset.label_column=p_np", "train.ensemble_size=3", *SMALL_RNN]
    recipe.append("train.log_every_n_steps=1")
    trained = job_here("smiles_csv_rnn", *recipe, tracking_uri=new_store, env={"DDPX_LOG_MODEL": "true"})
    summary, run_dir = trained.summary(), trained.run_dirs()[0]
    smiles, targets = heldout_molecules(molecules, "p_np")
    members = np.array([answers["probability"] for answers in members_answers(run_dir, 3, smiles)])
    mean, spread = members.mean(0), members.std(0)
    assert spread.max() > 1e-3  # the seeds made three different models

    written = pd.read_csv(run_dir / "reports" / "heldout_predictions.csv")
    assert list(written.columns) == ["index", "target", "logit", "probability", "ensemble_spread", "set"]
    assert written["target"].tolist() == targets
    assert np.allclose(written["probability"], mean, atol=1e-6) and np.allclose(written["ensemble_spread"], spread)
    assert summary["heldout"]["heldout_roc_auc"] == pytest.approx(roc_auc_score(targets, mean), abs=1e-9)
    for i, (record, probabilities) in enumerate(zip(summary["members"], members)):
        assert record["seed"] == i and record["epochs_run"] == 2
        assert record["heldout"]["heldout_roc_auc"] == pytest.approx(roc_auc_score(targets, probabilities), abs=1e-9)

    asked, answered = tmp_path / "asked.csv", tmp_path / "answered.csv"
    pd.DataFrame({"smiles": smiles}).to_csv(asked, index=False)
    for model in (str(run_dir / "model"), summary["run_id"]):  # the folder, and the MLflow model (pyfunc)
        predicted = ddpx_here("predict", model, str(asked), "--tracking-uri", new_store, "-o", str(answered))
        assert predicted.returncode == 0, predicted.output
        by_cli = pd.read_csv(answered)
        assert list(by_cli.columns) == ["smiles", "probability", "ensemble_spread"]
        assert np.allclose(by_cli["probability"], mean, atol=1e-6)
        assert np.allclose(by_cli["ensemble_spread"], spread, atol=1e-6)

    client = MlflowClient(new_store)
    (run,) = client.search_runs([client.get_experiment_by_name("smiles_csv_rnn").experiment_id])  # one run
    assert run.info.run_id == summary["run_id"] and run.data.params["train.ensemble_size"] == "3"
    assert run.data.metrics["heldout_roc_auc"] == summary["heldout"]["heldout_roc_auc"]
    assert run.data.metrics["dev_roc_auc"] == summary["best_dev"]
    for i, record in enumerate(summary["members"]):
        assert run.data.metrics[f"member_{i}/heldout_roc_auc"] == record["heldout"]["heldout_roc_auc"]
        assert run.data.metrics[f"member_{i}/best_dev_roc_auc"] == record["best_dev"]
    curve = client.get_metric_history(run.info.run_id, "member_2/dev_roc_auc")
    assert [m.step for m in curve] == [5, 6]  # its epochs follow the two members' before it
    steps = client.get_metric_history(run.info.run_id, "member_1/step/train_loss")
    assert [m.step for m in steps] == [1, 2, 3, 4] and "step/train_loss" not in run.data.metrics  # a curve each
    (logged,) = client.search_logged_models(experiment_ids=[run.info.experiment_id])  # one model
    assert logged.source_run_id == run.info.run_id

    # continued from its last.pt as if stopped before member 2's best.pt was written: members 0 and
    # 1 are read back from theirs, member 2 continues from last.pt, and the ensemble is the same
    (run_dir / "checkpoints" / "member_2" / "best.pt").unlink()
    again = continued("smiles_csv_rnn", recipe, run_dir / "checkpoints" / "last.pt", tmp_path / "continued")
    assert again["heldout"] == summary["heldout"] and again["members"] == summary["members"]
    checkpoints = Path(again["run_dir"]) / "checkpoints"  # the new run folder keeps every member's best.pt
    assert Path(again["run_dir"]).parent == tmp_path / "continued" / "ddpx-runs"
    assert all((checkpoints / f"member_{i}" / "best.pt").is_file() for i in range(3))


def regression_ensemble(job_here, tmp_path: Path, n: int, *keys: str):
    """A 2-member features-model ensemble on ``n`` molecules with two regression targets in the file's
    units (melting points near 150), on the test's ranks; the file and the finished job."""
    path = write_parsable_regression_csv(tmp_path / "mols.csv", n=n)
    trained = job_here(
        "smiles_csv_ffn",
        f"dataset.path={path}",
        'dataset.label_columns=["log S", "melting, point"]',
        "dataset.task_type=regression",
        "dataset.molecule_features=morgan_count",
        "train.ensemble_size=2",
        *keys,
        env={"DDPX_DATA_DIR": str(tmp_path / "data")},
    )
    return path, trained


@pytest.mark.slow
def test_a_regression_ensembles_spread_is_its_variance_z_scaled_on_dev_and_answered_in_the_files_units(
    job_here, ddpx_here, tmp_path
):
    pytest.importorskip("chemprop", reason="the features model needs Chemprop (pip install 'ddpx[chem]')")
    from ddpx.records.calibration import Calibration

    path, trained = regression_ensemble(
        job_here, tmp_path, 90, "model.hidden_size=32", "train.calibration=zscaling", "train.max_epochs=2"
    )
    summary, run_dir = trained.summary(), trained.run_dirs()[0]
    smiles, targets = heldout_molecules(path, TARGETS, regression=True)
    mean, variance = members_mean_and_variance(run_dir, smiles)
    spread = np.sqrt(variance)
    assert 100 < mean[:, 1].mean() < 200 and spread[:, 1].max() > 0.1  # melting points: the file's units
    written = pd.read_csv(run_dir / "reports" / "heldout_predictions.csv")
    for j, name in enumerate(TARGETS):
        assert np.allclose(written[f"prediction_{name}"], mean[:, j], atol=1e-4)
        assert np.allclose(written[f"ensemble_spread_{name}"], spread[:, j], atol=1e-4)
    errors = mean - np.array(targets)
    rmse = np.mean([np.sqrt(np.nanmean(errors[:, j] ** 2)) for j in range(2)])
    assert summary["heldout"]["heldout_rmse"] == pytest.approx(rmse, rel=1e-5)

    # z-scaling on dev: s^2 = mean((y - mean)^2 / variance) of the members' mean and spread squared
    dev_smiles, dev_targets = heldout_molecules(path, TARGETS, regression=True, split="dev")
    dev_mean, dev_variance = members_mean_and_variance(run_dir, dev_smiles)
    scale = np.nanmean((np.array(dev_targets) - dev_mean) ** 2 / dev_variance, 0)  # s^2 of each target
    calibration = Calibration.load(run_dir / "model")
    assert calibration.method == "zscaling" and calibration.normalized
    assert [v["scale"] ** 2 for v in calibration.fitted] == pytest.approx(scale, rel=1e-3)
    assert not np.allclose(scale, 1, rtol=0.05)  # the calibrator changes the variances
    # the held-out NLL reads the calibrated variance, s^2 spread^2; the spread squared alone is the model's own
    uncertainty = summary["uncertainty"]
    assert uncertainty["heldout_nll"] == pytest.approx(
        gaussian_nll(np.array(targets), mean, scale * variance), rel=1e-4
    )
    assert uncertainty["heldout_nll_uncalibrated"] == pytest.approx(
        gaussian_nll(np.array(targets), mean, variance), rel=1e-4
    )
    for j, name in enumerate(TARGETS):
        assert np.allclose(written[f"calibrated_variance_{name}"], scale[j] * variance[:, j], rtol=1e-3)
    assert (run_dir / "reports" / "heldout_error_vs_uncertainty.png").is_file()

    # ddpx predict --coverage 0.9: mean +- q std, q of the saved normalised scores, std = s spread
    asked, answered = tmp_path / "asked.csv", tmp_path / "answered.csv"
    pd.DataFrame({"smiles": [*smiles[:3], "not a molecule"]}).to_csv(asked, index=False)
    predicted = ddpx_here("predict", str(run_dir / "model"), str(asked), "--coverage", "0.9", "-o", str(answered))
    assert predicted.returncode == 0, predicted.output
    by_cli = pd.read_csv(answered)
    a, b = TARGETS
    spreads = [f"ensemble_spread_{t}" for t in TARGETS]
    assert list(by_cli.columns) == [
        "smiles",
        *(f"prediction_{t}" for t in TARGETS),
        *(f"{column}_{a}" for column in ("variance", "lower", "upper")),
        *(f"{column}_{b}" for column in ("variance", "lower", "upper")),
        *spreads,
        "problem",
    ]
    assert np.allclose(by_cli[spreads].to_numpy()[:3], spread[:3], atol=1e-4)
    q = calibration.thresholds(0.9)
    assert np.isfinite(q).all()
    for j, name in enumerate(TARGETS):
        std = np.sqrt(scale[j] * variance[:3, j])
        assert np.allclose(by_cli[f"variance_{name}"][:3], std**2, rtol=1e-3)
        assert np.allclose(by_cli[f"lower_{name}"][:3], mean[:3, j] - q[j] * std, rtol=1e-5, atol=1e-4)
        assert np.allclose(by_cli[f"upper_{name}"][:3], mean[:3, j] + q[j] * std, rtol=1e-5, atol=1e-4)
        # the interval of the held-out records, for the same molecules
        assert np.allclose(by_cli[f"lower_{name}"][:3], written[f"lower_{name}"][:3], rtol=1e-5, atol=1e-4)
    assert by_cli.iloc[3][[*spreads, f"lower_{a}", f"upper_{b}"]].isna().all()  # an unread row: no answer


@pytest.mark.slow
def test_members_with_a_variance_head_answer_the_total_variance_in_records_and_predict(job_here, ddpx_here, tmp_path):
    pytest.importorskip("chemprop", reason="the features model needs Chemprop (pip install 'ddpx[chem]')")
    path, trained = regression_ensemble(
        job_here, tmp_path, 60, "model.hidden_size=16", "model.uncertainty=mve", "train.max_epochs=1"
    )
    summary, run_dir = trained.summary(), trained.run_dirs()[0]
    smiles, targets = heldout_molecules(path, TARGETS, regression=True)
    answers = members_answers(run_dir, 2, smiles)
    means = np.array([a[[f"prediction_{t}" for t in TARGETS]].to_numpy() for a in answers])
    variances = np.array([a[[f"variance_{t}" for t in TARGETS]].to_numpy() for a in answers])
    mean, total = means.mean(0), variances.mean(0) + means.var(0)  # the law of total variance
    written = pd.read_csv(run_dir / "reports" / "heldout_predictions.csv")
    for j, name in enumerate(TARGETS):
        assert np.allclose(written[f"prediction_{name}"], mean[:, j], atol=1e-4)
        assert np.allclose(written[f"variance_{name}"], total[:, j], rtol=1e-4)
        assert np.allclose(written[f"ensemble_spread_{name}"], means.std(0)[:, j], atol=1e-4)
        rmse = np.sqrt(np.mean((mean[:, j] - np.array(targets)[:, j]) ** 2))
        assert summary["by_label"][f"heldout_rmse/{name.replace(',', '_')}"] == pytest.approx(rmse, rel=1e-5)
    assert summary["uncertainty"]["heldout_nll"] == pytest.approx(
        gaussian_nll(np.array(targets), mean, total), rel=1e-4
    )
    asked, answered = tmp_path / "asked.csv", tmp_path / "answered.csv"
    pd.DataFrame({"smiles": smiles}).to_csv(asked, index=False)
    predicted = ddpx_here("predict", str(run_dir / "model"), str(asked), "-o", str(answered))
    assert predicted.returncode == 0, predicted.output
    by_cli = pd.read_csv(answered)
    assert np.allclose(by_cli[[f"variance_{t}" for t in TARGETS]], total, rtol=1e-4)
    assert np.allclose(by_cli[[f"ensemble_spread_{t}" for t in TARGETS]], means.std(0), atol=1e-4)
