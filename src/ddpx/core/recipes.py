"""Recipes: find one by name or path, read its TOML, and resolve it against the plugins' keys.

Resolution layers, later wins: the core's ``train.*`` defaults, the task's ``dataset.*``
defaults, the model's ``model.*`` defaults, the recipe file, then ``KEY=VALUE`` overrides. Every
key is checked against the schema the core and the chosen task and model declare, so a typo is
an error with a did-you-mean rather than a silently ignored setting.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ddpx.core.components import ModelSpec, Param, TaskSpec
from ddpx.core.config import (
    META_PARAMS,
    TRAIN_PARAMS,
    coerce,
    flatten,
    parse_override,
    unflatten,
    unknown_key_error,
)
from ddpx.core.errors import UserError
from ddpx.core.suggestions import did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.core.registry import Registry


@dataclass(frozen=True)
class Recipe:
    """A fully resolved recipe: every key has a checked value."""

    name: str
    source: str
    config: dict[str, Any]
    task: TaskSpec
    model: ModelSpec
    requested: str = ""  # the name or path the user gave

    @property
    def flat(self) -> dict[str, Any]:
        return flatten(self.config)

    @property
    def train(self) -> dict[str, Any]:
        return self.config["train"]

    def to_toml(self) -> str:
        return to_toml(self.config)


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


def _schema(task: TaskSpec, model: ModelSpec) -> dict[str, Param]:
    schema = {k: p for k, p in META_PARAMS.items() if "." not in k}
    schema.update({f"dataset.{k}": p for k, p in task.params.items()})
    schema["model.name"] = META_PARAMS["model.name"]
    schema.update({f"model.{k}": p for k, p in model.params.items()})
    schema.update({f"train.{k}": p for k, p in TRAIN_PARAMS.items()})
    return schema


def resolve_recipe(registry: "Registry", name_or_path: str, overrides: Iterable[str] = ()) -> Recipe:
    """Resolve a recipe by name or path with ``KEY=VALUE`` overrides, checking every key."""
    path = find_recipe(registry, name_or_path)
    file_values = flatten(read_recipe_file(path))
    parsed = [parse_override(text) for text in overrides]
    override_values = dict(parsed)
    where_file = f" in recipe file '{path}'"

    def chosen(key: str) -> str:
        value = override_values.get(key, file_values.get(key, ""))
        if not isinstance(value, str) or not value:
            raise UserError(f"recipe '{name_or_path}' does not set '{key}'. Add `{key} = \"...\"` to {path}.")
        return value

    task = registry.get("tasks", chosen("task"), key="task")
    model = registry.get("models", chosen("model.name"), key="model.name")
    schema = _schema(task, model)

    values: dict[str, Any] = {key: param.default for key, param in schema.items()}
    values["name"] = path.stem
    for key, value in file_values.items():
        if key not in schema:
            raise unknown_key_error(key, schema, where_file)
        values[key] = coerce(key, value, schema[key], from_text=False)
    for key, text in parsed:
        if key not in schema:
            raise unknown_key_error(key, schema, "")
        values[key] = coerce(key, text, schema[key], from_text=True)

    _check_components(registry, values)
    return Recipe(name=values["name"], source=str(path), config=unflatten(values), task=task, model=model,
                  requested=name_or_path)


def _check_components(registry: "Registry", values: Mapping[str, Any]) -> None:
    registry.get("samplers", values["train.sampler"], key="train.sampler")
    registry.get("wrappers", values["train.wrapper"], key="train.wrapper")


@dataclass(frozen=True)
class RecipeListing:
    """One row of ``ddpx recipes``."""

    name: str
    task: str
    model: str
    metric: str
    description: str
    plugin: str


def list_recipes(registry: "Registry") -> list[RecipeListing]:
    """Every registered recipe, read cheaply (no torch), sorted by name."""
    rows = []
    tasks = registry.all("tasks")
    for name, source in sorted(registry.all("recipes").items()):
        data = read_recipe_file(Path(source.path))
        task_name = str(data.get("task", ""))
        task = tasks.get(task_name)
        rows.append(
            RecipeListing(
                name=name,
                task=task_name,
                model=str(data.get("model", {}).get("name", "")),
                metric=f"heldout_{task.metric}" if task else "?",
                description=str(data.get("description", "")),
                plugin=registry.owner("recipes", name),
            )
        )
    return rows
