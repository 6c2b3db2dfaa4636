"""The plugin's own tests, through the real ddpx runner on 2 CPU ranks (the ``ddpx_run`` fixture)."""

import json
import subprocess
import sys


def test_the_plugin_registers_its_task_model_and_recipe():
    listing = subprocess.run(
        [sys.executable, "-m", "ddpx", "plugins", "--json"], capture_output=True, text=True, check=True
    ).stdout
    (moons,) = [plugin for plugin in json.loads(listing)["plugins"] if plugin["name"] == "moons"]
    assert moons["registers"] == {"tasks": ["moons"], "models": ["moons_mlp"], "recipes": ["moons_mlp"]}


def test_moons_recipe_learns_on_two_ranks(ddpx_run):
    result = ddpx_run("moons_mlp", "train.max_epochs=4")
    assert result.summary.heldout_samples == 400
    assert result.heldout["heldout_roc_auc"] > 0.9
    assert result.checkpoint.is_file()
