"""Recipe files: find a registered one by name (or take a path), write a resolved one back.

Reading a file is :mod:`ddpx.contract.recipe_file`'s, shared with the registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddpx.contract.errors import UserError, did_you_mean

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.plugin_host.registry import Registry


def to_toml(config: Mapping[str, Any]) -> str:
    """Serialise a nested recipe as TOML (scalars first, then one table per section)."""
    import tomli_w

    return tomli_w.dumps(dict(config))


def looks_like_path(name_or_path: str) -> bool:
    return name_or_path.endswith(".toml") or "/" in name_or_path or Path(name_or_path).is_file()


def find_recipe(registry: Registry, name_or_path: str) -> Path:
    """The file of a registered recipe, or the path itself when given a file."""
    if looks_like_path(name_or_path):
        path = Path(name_or_path)
        if not path.is_file():
            raise UserError(f"recipe file '{name_or_path}' does not exist. `ddpx recipes` lists the built-in recipes.")
        return path
    recipes = registry.all("recipes")
    if name_or_path not in recipes:
        raise UserError(
            f"unknown recipe '{name_or_path}'.{did_you_mean(name_or_path, recipes)} "
            f"Available: {', '.join(sorted(recipes)) or 'none'}. `ddpx recipes` lists them; a path to a .toml file also works."
        )
    return Path(recipes[name_or_path].path)
