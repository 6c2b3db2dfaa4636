"""Recipe discovery and resolution against the plugins' declared keys."""

import sys
from pathlib import Path

import pytest

from ddpx.config.listing import list_recipes
from ddpx.config.recipe import resolve_recipe
from ddpx.contract.errors import UserError
from ddpx.contract.recipe_file import read_recipe_file
from ddpx.plugin_host.registry import load_registry

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


@pytest.fixture(scope="module")
def registry():
    return load_registry()


def test_builtin_recipe_resolves_with_every_layer(registry):
    recipe = resolve_recipe(registry, "mlp_synthetic", ["train.lr=0.05", "model.dim_hidden=128"])
    assert recipe.name == "mlp_synthetic"
    assert recipe.task.name == "mlp_synthetic" and recipe.model.name == "mlp"
    train = recipe.config["train"]
    assert train["lr"] == 0.05  # override
    assert train["batch_size"] == 64  # recipe file
    assert train["precision"] == "fp32"  # core default
    assert recipe.config["model"]["dim_hidden"] == 128
    assert recipe.config["dataset"]["n_classes"] == 32


def test_resolved_recipe_round_trips_through_toml(registry, tmp_path):
    recipe = resolve_recipe(registry, "mlp_synthetic", ["train.max_epochs=2"])
    path = tmp_path / "copy.toml"
    path.write_text(recipe.to_toml())
    assert tomllib.loads(path.read_text()) == recipe.config
    again = resolve_recipe(registry, str(path))
    assert again.config == recipe.config


def test_unknown_key_suggests_the_close_one(registry):
    with pytest.raises(UserError, match=r"unknown recipe key 'train\.lrr'\. Did you mean 'train\.lr'\?"):
        resolve_recipe(registry, "mlp_synthetic", ["train.lrr=3"])
    with pytest.raises(UserError, match="Did you mean 'dataset.train_size'"):
        resolve_recipe(registry, "mlp_synthetic", ["dataset.trainsize=3"])


def test_unknown_key_in_a_file_names_the_file(registry, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('task = "mlp_synthetic"\n[model]\nname = "mlp"\n[train]\nbatchsize = 3\n')
    with pytest.raises(UserError, match=r"train\.batchsize.*bad\.toml.*Did you mean 'train\.batch_size'"):
        resolve_recipe(registry, str(path))


def test_unknown_recipe_task_and_model(registry, tmp_path):
    with pytest.raises(UserError, match="Did you mean 'mlp_synthetic'"):
        resolve_recipe(registry, "mlp_synthetc")
    with pytest.raises(UserError, match="unknown task 'nope'"):
        resolve_recipe(registry, "mlp_synthetic", ["task=nope"])
    with pytest.raises(UserError, match="unknown model 'mlpp'.*Did you mean 'mlp'"):
        resolve_recipe(registry, "mlp_synthetic", ["model.name=mlpp"])
    with pytest.raises(UserError, match="unknown sampler"):
        resolve_recipe(registry, "mlp_synthetic", ["train.sampler=nope"])


def test_malformed_and_missing_files(registry, tmp_path):
    bad = tmp_path / "broken.toml"
    bad.write_text("name = \n[train\n")
    with pytest.raises(UserError, match="not valid TOML"):
        resolve_recipe(registry, str(bad))
    with pytest.raises(UserError, match="does not exist"):
        resolve_recipe(registry, str(tmp_path / "missing.toml"))
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(UserError, match="UTF-8 TOML"):
        read_recipe_file(binary)


def test_listing_reads_names_tasks_and_metrics(registry):
    rows = {row.name: row for row in list_recipes(registry)}
    row = rows["mlp_synthetic"]
    assert (row.task, row.model, row.metric, row.plugin) == (
        "mlp_synthetic",
        "mlp",
        "heldout_accuracy",
        "mlp_synthetic",
    )
    assert "0.971" in row.description
    assert Path(registry.all("recipes")["mlp_synthetic"].path).is_file()
