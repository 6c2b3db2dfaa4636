"""The example third-party plugin (examples/ddpx-moons), really installed with pip, and the
helpers plugin authors test with (ddpx.testing)."""

import json
import shutil
import subprocess
import sys

import torch
from mlflow.tracking import MlflowClient

from conftest import TESTS
from ddpx.testing import run_recipe

EXAMPLE = TESTS.parent / "examples" / "ddpx-moons"


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], check=True,
                   capture_output=True, text=True)


def listed(run_ddpx):
    plugins = {p["name"]: p for p in json.loads(run_ddpx("plugins", "--json").stdout)["plugins"]}
    recipes = {r["name"]: r for r in json.loads(run_ddpx("recipes", "--json").stdout)}
    return plugins, recipes


def test_installed_example_plugin_lists_runs_passes_its_tests_and_uninstalls(run_ddpx, tmp_path, tracking_uri,
                                                                             experiment):
    source = tmp_path / "ddpx-moons"  # build from a copy: a build leaves files beside the sources
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    pip("install", "--quiet", "--no-deps", "--no-build-isolation", str(source))
    try:
        plugins, recipes = listed(run_ddpx)
        moons = plugins["moons"]
        assert (moons["distribution"], moons["version"], moons["source"]) == ("ddpx-moons", "0.2.0", "entry point")
        assert moons["registers"] == {"tasks": ["moons"], "models": ["moons_mlp"], "recipes": ["moons_mlp"]}
        assert recipes["moons_mlp"]["plugin"] == "moons" and recipes["moons_mlp"]["metric"] == "heldout_roc_auc"

        result = run_ddpx("recipe", "moons_mlp", "--nproc", "2", "--tracking-uri", tracking_uri, "--experiment", experiment)
        assert result.returncode == 0, result.output
        client = MlflowClient(tracking_uri)
        (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
        assert run.info.status == "FINISHED" and run.data.metrics["heldout_roc_auc"] > 0.9

        checked = run_ddpx("plugins", "check", "ddpx-moons")
        assert checked.returncode == 0, checked.output
        assert "PASS  moons: recipe moons_mlp trains on 2 CPU ranks: heldout_roc_auc" in checked.stdout

        own_tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests")],
                                   cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert own_tests.returncode == 0, own_tests.stdout + own_tests.stderr
        assert "2 passed" in own_tests.stdout
    finally:
        pip("uninstall", "--yes", "ddpx-moons")
    plugins, recipes = listed(run_ddpx)
    assert "moons" not in plugins and "moons_mlp" not in recipes


def test_run_recipe_registers_uninstalled_plugins_in_every_rank(tmp_path):
    result = run_recipe(str(TESTS / "recipes" / "tiny_mlp.toml"), ["model.name=rank_seeded_mlp", "train.max_epochs=1"],
                        plugins=["ddpx_testplug_rank_params"], nproc=2, workdir=tmp_path)
    assert result.summary.heldout_samples == 301 and result.checkpoint.is_file()
    starts = [torch.load(result.run_dir / f"start-params-rank{r}.pt", weights_only=True) for r in range(2)]
    assert all(torch.equal(starts[0][k], starts[1][k]) for k in starts[0])  # the plugin ran in both ranks
