"""Every built-in recipe resolves to the TOML recorded in tests/recipes/resolved/.

The files there are `ddpx show NAME` (without its first comment line) for every registered recipe.
A change to a recipe's values, or to how recipes resolve, shows here as a difference; when the change
is meant, rewrite them with `python tests/test_recipe_presets.py`.
"""

from pathlib import Path

import pytest

from ddpx.config.listing import list_recipes
from ddpx.config.recipe import resolve_recipe
from ddpx.contract.errors import UserError
from ddpx.plugin_host.registry import load_registry

RESOLVED = Path(__file__).parent / "recipes" / "resolved"


@pytest.fixture(scope="module")
def registry():
    return load_registry()


def runnable_names(registry) -> list[str]:
    return [row.name for row in list_recipes(registry)]


def test_every_recipe_has_its_resolved_toml_recorded(registry):
    assert sorted(runnable_names(registry)) == sorted(path.stem for path in RESOLVED.glob("*.toml"))


@pytest.mark.parametrize("name", sorted(path.stem for path in RESOLVED.glob("*.toml")))
def test_recipe_resolves_to_its_recorded_toml(registry, name):
    expected = (RESOLVED / f"{name}.toml").read_text(encoding="utf-8")
    assert resolve_recipe(registry, name).to_toml() == expected


if __name__ == "__main__":  # rewrite the recorded TOML from the recipes as they are now
    registry = load_registry()
    for old in RESOLVED.glob("*.toml"):
        old.unlink()
    for name in runnable_names(registry):
        (RESOLVED / f"{name}.toml").write_text(resolve_recipe(registry, name).to_toml(), encoding="utf-8")


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_users_file_builds_on_a_builtin_recipe_by_name(registry, tmp_path):
    mine = write(tmp_path, "my_bbbp.toml", 'extends = "bbbp_dmpnn"\n[train]\nlr = 0.0005\n')
    recipe = resolve_recipe(registry, mine, ["train.max_epochs=3"])
    builtin = resolve_recipe(registry, "bbbp_dmpnn").config
    assert recipe.name == "my_bbbp" and recipe.config["description"] == ""  # its own, not inherited
    assert (recipe.config["train"]["lr"], recipe.config["train"]["max_epochs"]) == (0.0005, 3)
    assert recipe.config["model"] == builtin["model"] and recipe.config["dataset"] == builtin["dataset"]
    assert recipe.task.name == "bbbp" and recipe.model.name == "dmpnn"


def test_bases_apply_in_order_then_the_file_and_paths_are_relative_to_it(registry, tmp_path):
    (tmp_path / "bases").mkdir()
    write(tmp_path / "bases", "wide.toml", 'description = "not inherited"\n[model]\nhidden_size = 600\ndepth = 5\n')
    mine = write(
        tmp_path,
        "mine.toml",
        'extends = ["bbbp_data", "dmpnn_family", "bases/wide.toml"]\n[model]\ndepth = 4\n',
    )
    recipe = resolve_recipe(registry, mine)
    assert recipe.config["model"]["hidden_size"] == 600  # the later base wins
    assert recipe.config["model"]["depth"] == 4  # the file wins over every base
    assert recipe.config["train"]["lr_schedule"] == "noam"  # from dmpnn_family's own base
    assert recipe.config["dataset"]["label_column"] == "p_np" and recipe.config["description"] == ""


def test_a_missing_base_a_cycle_and_a_bad_extends_are_clear_errors(registry, tmp_path):
    with pytest.raises(UserError, match=r"extends .bbbp_dat., which is no registered recipe\. Did you mean"):
        resolve_recipe(registry, write(tmp_path, "typo.toml", 'extends = "bbbp_dat"\n'))
    with pytest.raises(UserError, match=r"extends 'none\.toml', and there is no file .*relative to the file"):
        resolve_recipe(registry, write(tmp_path, "nofile.toml", 'extends = "none.toml"\n'))
    write(tmp_path, "b.toml", 'extends = ["bbbp_data", "a.toml"]\n')
    with pytest.raises(UserError, match=r"recipe 'a' extends itself: a -> b -> a\."):
        resolve_recipe(registry, write(tmp_path, "a.toml", 'extends = "b.toml"\n'))
    with pytest.raises(UserError, match=r"`extends` in recipe file .* should name a recipe, or a list of them"):
        resolve_recipe(registry, write(tmp_path, "number.toml", "extends = 3\n"))


def test_an_unknown_key_in_a_base_names_the_base(registry, tmp_path):
    write(tmp_path, "base.toml", "[train]\nbatchsize = 3\n")
    with pytest.raises(UserError, match=r"'train\.batchsize' in recipe file '.*base\.toml'\. Did you mean"):
        resolve_recipe(registry, write(tmp_path, "child.toml", 'extends = ["bbbp_dmpnn", "base.toml"]\n'))


def test_a_preset_is_listed_apart_and_not_run_on_its_own(registry):
    presets = {row.name for row in list_recipes(registry, presets=True)}
    assert {"bbbp_data", "rnn_family", "dmpnn_family", "ffn_family", "chemprop_training"} <= presets
    assert not presets & set(runnable_names(registry))
    with pytest.raises(UserError, match=r"chemprop_training. is a preset.*no .task.*built on it \(bace_dmpnn"):
        resolve_recipe(registry, "chemprop_training")
    with pytest.raises(UserError, match=r"'bbbp_data' is a preset.*no 'model\.name'.*bbbp_rnn_enum\)"):
        resolve_recipe(registry, "bbbp_data")
    assert resolve_recipe(registry, "bbbp_data", ["model.name=smiles_rnn"]).model.name == "smiles_rnn"


def test_the_molecule_recipes_stay_short(registry):
    """Issue 50: the molecule recipes, presets included, under 400 lines of TOML (comments and blank lines aside)."""
    folder = Path(registry.all("recipes")["bbbp_dmpnn"].path).parent
    lines = [
        line
        for path in [*folder.glob("*.toml"), *folder.glob("presets/*.toml")]
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert len(lines) < 400
