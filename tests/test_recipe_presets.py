"""Every built-in recipe resolves to the TOML recorded in tests/recipes/resolved/.

The files there are `ddpx show NAME` (without its first comment line) for every registered recipe.
A change to a recipe's values, or to how recipes resolve, shows here as a difference; when the change
is meant, rewrite them with `python tests/test_recipe_presets.py`.
"""

from pathlib import Path

import pytest

from ddpx.config.listing import list_recipes
from ddpx.config.recipe import resolve_recipe
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
