"""The example third-party plugin (examples/ddpx-moons), really installed with pip, and the
helpers plugin authors test with (ddpx.testing)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import TEST_PLUGINS, TESTS
from mlflow.tracking import MlflowClient
from smiles_files import write_smiles_csv

from ddpx.testing import run_recipe

pytestmark = pytest.mark.slow  # every test here starts ranks

EXAMPLE = TESTS.parent / "examples" / "ddpx-moons"
MODEL_EXAMPLE = TESTS.parent / "examples" / "ddpx-smiles-cnn"


def installed(example: Path, tmp_path: Path) -> Path:
    """``example`` installed with pip into a folder of its own, returned (put on PYTHONPATH for the
    commands that should see it only, so the tests that run beside never do)."""
    source, site = tmp_path / example.name, tmp_path / "site"
    shutil.copytree(example, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "--quiet", "--no-deps"]
    subprocess.run([*pip, "--no-build-isolation", "--target", str(site), str(source)], check=True, capture_output=True)
    return site


def listed(run_ddpx, env=None):
    plugins = {p["name"]: p for p in json.loads(run_ddpx("plugins", "--json", env=env).stdout)["plugins"]}
    recipes = {r["name"]: r for r in json.loads(run_ddpx("recipes", "--json", env=env).stdout)}
    return plugins, recipes


def test_installed_example_plugin_lists_runs_passes_its_tests_and_uninstalls(
    run_ddpx, ddpx_here, tmp_path, tracking_uri, experiment
):
    env = {"PYTHONPATH": os.pathsep.join([str(installed(EXAMPLE, tmp_path)), str(TEST_PLUGINS)])}
    plugins, recipes = listed(run_ddpx, env)
    moons = plugins["moons"]
    assert (moons["distribution"], moons["version"], moons["source"]) == ("ddpx-moons", "0.2.0", "entry point")
    assert moons["registers"] == {"tasks": ["moons"], "models": ["moons_mlp"], "recipes": ["moons_mlp"]}
    assert recipes["moons_mlp"]["plugin"] == "moons" and recipes["moons_mlp"]["metric"] == "heldout_roc_auc"

    result = run_ddpx(
        "recipe", "moons_mlp", "--nproc", "2", "--tracking-uri", tracking_uri, "--experiment", experiment, env=env
    )
    assert result.returncode == 0, result.output
    client = MlflowClient(tracking_uri)
    (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert run.info.status == "FINISHED" and run.data.metrics["heldout_roc_auc"] > 0.9

    checked = run_ddpx("plugins", "check", "ddpx-moons", env=env)
    assert checked.returncode == 0, checked.output
    assert "PASS  moons: recipe moons_mlp trains on 2 CPU ranks: heldout_roc_auc" in checked.stdout

    own_tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    assert own_tests.returncode == 0, own_tests.stdout + own_tests.stderr
    assert "2 passed" in own_tests.stdout

    plugins, recipes = listed(ddpx_here)  # without the folder (this process never had it) the plugin is gone
    assert "moons" not in plugins and "moons_mlp" not in recipes


def test_run_recipe_registers_uninstalled_plugins_in_every_rank(tmp_path):
    result = run_recipe(
        str(TESTS / "recipes" / "tiny_mlp.toml"),
        ["model.name=rank_seeded_mlp", "train.max_epochs=1"],
        plugins=["ddpx_testplug_rank_params"],
        nproc=2,
        workdir=tmp_path,
    )
    assert result.summary.heldout_samples == 301 and result.checkpoint.is_file()
    starts = [torch.load(result.run_dir / f"start-params-rank{r}.pt", weights_only=True) for r in range(2)]
    assert all(torch.equal(starts[0][k], starts[1][k]) for k in starts[0])  # the plugin ran in both ranks


def test_a_plugins_model_is_a_study_candidate_by_name(run_ddpx, tmp_path, tracking_uri, experiment):
    """The example model plugin's own study file, pointed at a small file of BBBP's format (one seed,
    one epoch, a random split): its recipe competes with ddpx's BiLSTM under the study's rule and
    stands in the study's table."""
    env = {"PYTHONPATH": str(installed(MODEL_EXAMPLE, tmp_path))}
    write_smiles_csv(tmp_path / "bbbp.csv", n=240)
    replaced = {
        "data": 'data = "bbbp.csv"',
        "seeds": "seeds = [0]",
        "overrides": 'overrides = ["dataset.split=random", "train.max_epochs=1"]',
    }
    lines = [replaced.get(line.partition(" =")[0], line) for line in (MODEL_EXAMPLE / "study.toml").open()]
    (tmp_path / "study.toml").write_text("\n".join(line.rstrip("\n") for line in lines) + "\n")
    launch = ["--nproc", "2", "--tracking-uri", tracking_uri, "--experiment", experiment]

    ran = run_ddpx("study", "run", "study.toml", *launch, env=env)
    assert ran.returncode == 0, ran.output
    assert "candidate=bbbp_smiles_cnn seed=0" in ran.stdout and "candidate=bbbp_rnn seed=0" in ran.stdout
    report = run_ddpx("study", "report", "study.toml", env=env)
    assert report.returncode == 0, report.output
    assert "| bbbp |" in report.stdout and "D-MPNN (GEM)" in report.stdout

    without = run_ddpx("study", "run", "study.toml", "--dry-run", *launch)  # the plugin not installed
    assert without.returncode == 2 and "bbbp_smiles_cnn" in without.stderr and "Traceback" not in without.output
