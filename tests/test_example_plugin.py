"""The example third-party plugin (examples/ddpx-moons), really installed with pip, and the
helpers plugin authors test with (ddpx.testing)."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from conftest import TEST_PLUGINS, TESTS
from mlflow.tracking import MlflowClient

from ddpx.testing import run_recipe

pytestmark = pytest.mark.slow  # every test here starts ranks

EXAMPLE = TESTS.parent / "examples" / "ddpx-moons"


def listed(run_ddpx, env=None):
    plugins = {p["name"]: p for p in json.loads(run_ddpx("plugins", "--json", env=env).stdout)["plugins"]}
    recipes = {r["name"]: r for r in json.loads(run_ddpx("recipes", "--json", env=env).stdout)}
    return plugins, recipes


def test_installed_example_plugin_lists_runs_passes_its_tests_and_uninstalls(
    run_ddpx, tmp_path, tracking_uri, experiment
):
    # installed with pip into a folder of its own (on PYTHONPATH for these commands only), so the
    # tests that run beside this one never see it
    source, site = tmp_path / "ddpx-moons", tmp_path / "site"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(TEST_PLUGINS)])}
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

    plugins, recipes = listed(run_ddpx)  # without the folder the plugin is gone again
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
