"""Recipe files: find one by name or path, read its TOML, write a resolved one back.

Nothing here knows about plugins beyond the registry's listing of recipe files, so the
registry can read a recipe's name without importing recipe resolution.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ddpx.contract.errors import UserError, did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.plugin_host.registry import Registry


def to_toml(config: Mapping[str, Any]) -> str:
    """Serialise a nested recipe as TOML (scalars first, then one table per section)."""
    import tomli_w

    return tomli_w.dumps(dict(config))


def read_recipe_file(path: Path) -> dict[str, Any]:
    """Parse a recipe file; a missing or malformed file is a clear error naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"recipe file '{path}' does not exist. `ddpx recipes` lists the built-in recipes.") from None
    except (UnicodeDecodeError, IsADirectoryError, PermissionError) as exc:
        raise UserError(f"cannot read recipe file '{path}': {exc}. A recipe is a UTF-8 TOML file.") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(
            f"recipe file '{path}' is not valid TOML: {exc}. Fix that line; `ddpx show mlp_synthetic` "
            "prints a recipe in the expected form."
        ) from None


def recipe_name_of(path: Path) -> str:
    """The name a recipe file declares (its ``name`` key), or its file stem."""
    data = read_recipe_file(Path(path))
    name = data.get("name")
    return name if isinstance(name, str) and name else Path(path).stem


def looks_like_path(name_or_path: str) -> bool:
    return name_or_path.endswith(".toml") or "/" in name_or_path or Path(name_or_path).is_file()


def find_recipe(registry: "Registry", name_or_path: str) -> Path:
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
