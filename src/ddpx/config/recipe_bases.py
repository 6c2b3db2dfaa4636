"""Recipes built on others: ``extends`` names the recipes a recipe file starts from.

``extends = "bbbp_data"`` or ``extends = ["bbbp_data", "dmpnn_family"]``: each base is read (with
its own bases) in the order given, then the file's own keys; per dotted key, the later wins, so the
file's keys win over every base's (and ``KEY=VALUE`` overrides over the file's). A list is a value
of its own: a later one replaces it whole. A base's ``name`` and ``description`` stay its own.

A base is a registered recipe's name, or a file: text ending in ``.toml`` or holding a ``/``, read
relative to the file that names it. A recipe that names no task or no model once its bases are in
is a *preset*: a base for other recipes, listed apart (``ddpx recipes``) and not run on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddpx.config.values import flatten
from ddpx.contract.errors import UserError, did_you_mean
from ddpx.contract.recipe_file import read_recipe_file

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.plugin_host.registry import Registry

OWN_KEYS = ("name", "description")  # never inherited from a base
EXAMPLE = 'extends = ["bbbp_data", "dmpnn_family"]'


@dataclass(frozen=True)
class RecipeValues:
    """A recipe file's keys with its bases', dotted, the file each value came from, and every base
    it builds on, its bases' bases too (as ``extends`` names them)."""

    values: dict[str, Any]
    origin: dict[str, Path]
    bases: tuple[str, ...] = ()

    @property
    def is_preset(self) -> bool:
        return not self.values.get("task") or not self.values.get("model.name")


def read_with_bases(registry: Registry, path: Path) -> RecipeValues:
    """The keys of the recipe file at ``path``, its bases' first (see the module's docstring)."""
    return _read(registry, Path(path), ())


def _read(registry: Registry, path: Path, chain: tuple[Path, ...]) -> RecipeValues:
    here = path.resolve()
    if here in chain:
        cycle = " -> ".join(p.stem for p in (*chain[chain.index(here) :], here))
        raise UserError(
            f"recipe '{here.stem}' extends itself: {cycle}. Remove one of these `extends`; "
            "a recipe's bases may not lead back to it."
        )
    data = read_recipe_file(path)
    values: dict[str, Any] = {}
    origin: dict[str, Path] = {}
    bases: list[str] = []
    for base in base_names(data.pop("extends", []), path):
        inherited = _read(registry, _find_base(registry, base, path), (*chain, here))
        bases += [base, *inherited.bases]
        for key, value in inherited.values.items():
            if key not in OWN_KEYS:
                values[key] = value
                origin[key] = inherited.origin[key]
    for key, value in flatten(data).items():
        values[key] = value
        origin[key] = path
    return RecipeValues(values, origin, tuple(bases))


def base_names(extends: Any, path: Path) -> list[str]:
    """The bases an ``extends`` value names: one text, or a list of them."""
    names = [extends] if isinstance(extends, str) else extends
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise UserError(
            f"`extends` in recipe file '{path}' should name a recipe, or a list of them applied in order "
            f"(later wins), such as {EXAMPLE}; it is {extends!r}."
        )
    return names


def _find_base(registry: Registry, base: str, path: Path) -> Path:
    if base.endswith(".toml") or "/" in base:
        found = path.parent / base
        if not found.is_file():
            raise UserError(
                f"recipe file '{path}' extends '{base}', and there is no file '{found}'. A base given as a path "
                "is read relative to the file that names it; a base given by name is a registered recipe."
            )
        return found
    recipes = registry.all("recipes")
    if base not in recipes:
        raise UserError(
            f"recipe file '{path}' extends '{base}', which is no registered recipe.{did_you_mean(base, recipes)} "
            "`ddpx recipes` lists the recipes and presets there are; a path ending in .toml names a file instead."
        )
    return Path(recipes[base].path)


def built_on(registry: Registry, name: str) -> list[str]:
    """The registered recipes, presets aside, that build on ``name`` (directly or through other bases)."""
    children = []
    for child, source in sorted(registry.all("recipes").items()):
        read = read_with_bases(registry, Path(source.path))
        if name in read.bases and not read.is_preset:
            children.append(child)
    return children


def missing_key_error(registry: Registry, name_or_path: str, path: Path, key: str) -> UserError:
    """The error for a recipe that sets no ``task`` or ``model.name``: a preset's, or a file's."""
    if name_or_path not in registry.all("recipes"):
        return UserError(
            f"recipe '{name_or_path}' does not set '{key}'. Add `{key} = \"...\"` to {path} "
            f"(or `{key}=...` to the command line)."
        )
    children = built_on(registry, name_or_path)
    shown = ", ".join(children[:6]) + (", ..." if len(children) > 6 else "")
    runs = f"Run a recipe built on it ({shown}), or build" if children else "Build"
    return UserError(
        f"'{name_or_path}' is a preset, a base for other recipes, not one to run: it sets no '{key}'. {runs} "
        f'your own on it: a .toml file with `extends = "{name_or_path}"` and the keys it lacks, run with '
        f"`ddpx recipe FILE` (or add `{key}=...` to this command)."
    )
