"""The plugin's own tests, through the real ddpx runner on 2 CPU ranks (ddpx.testing)."""

from ddpx.core.registry import load_registry


def test_the_plugin_registers_its_task_model_and_recipe():
    registry = load_registry()
    assert registry.owner("tasks", "moons") == "moons"
    assert registry.owner("models", "moons_mlp") == "moons"
    assert "moons_mlp" in registry.all("recipes")


def test_moons_recipe_learns_on_two_ranks(ddpx_run):
    result = ddpx_run("moons_mlp", "train.max_epochs=4")
    assert result.summary["heldout_samples"] == 400
    assert result.heldout["heldout_roc_auc"] > 0.9
    assert result.checkpoint.is_file()
