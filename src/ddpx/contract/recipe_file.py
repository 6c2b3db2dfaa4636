"""A recipe file, as a :class:`~ddpx.contract.specs.RecipeSource` points at one: UTF-8 TOML,
named by its ``name`` key (or its stem).

Reading one needs nothing of plugins or of recipe resolution, so the registry names a plugin's
recipes and the config resolves them from the same reader.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ddpx.contract.errors import UserError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


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
