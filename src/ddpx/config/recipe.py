"""Resolving a recipe: defaults, its file and `KEY=VALUE` overrides, every key checked.

Resolution layers, later wins: the core's ``train.*`` defaults, the task's ``dataset.*``
defaults, the model's ``model.*`` defaults, the recipes the file ``extends`` (in order,
:mod:`ddpx.config.recipe_bases`), the recipe file, then ``KEY=VALUE`` overrides. Every
key is checked against the schema the core and the chosen task and model declare, so a typo is
an error with a did-you-mean rather than a silently ignored setting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ddpx.config.recipe_bases import missing_key_error, read_with_bases
from ddpx.config.recipe_files import find_recipe, to_toml
from ddpx.config.train_params import META_PARAMS, TRAIN_PARAMS, check_calibration
from ddpx.config.values import coerce, parse_override, unflatten, unknown_key_error
from ddpx.contract.errors import UserError
from ddpx.contract.names import check_path_name
from ddpx.contract.records import Param
from ddpx.contract.specs import ModelSpec, TaskSpec

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.plugin_host.registry import Registry


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
    def train(self) -> dict[str, Any]:
        return self.config["train"]

    def to_toml(self) -> str:
        return to_toml(self.config)


def _schema(task: TaskSpec, model: ModelSpec) -> dict[str, Param]:
    schema = {k: p for k, p in META_PARAMS.items() if "." not in k}
    schema.update({f"dataset.{k}": p for k, p in task.params.items()})
    schema["model.name"] = META_PARAMS["model.name"]
    schema.update({f"model.{k}": p for k, p in model.params.items()})
    schema.update({f"train.{k}": p for k, p in TRAIN_PARAMS.items()})
    return schema


def resolve_recipe(registry: Registry, name_or_path: str, overrides: Iterable[str] = ()) -> Recipe:
    """Resolve a recipe by name or path with ``KEY=VALUE`` overrides, checking every key."""
    path = find_recipe(registry, name_or_path)
    from_files = read_with_bases(registry, path)
    file_values = from_files.values
    parsed = [parse_override(text) for text in overrides]
    override_values = dict(parsed)

    def chosen(key: str) -> str:
        value = override_values.get(key, file_values.get(key, ""))
        if not isinstance(value, str) or not value:
            raise missing_key_error(registry, name_or_path, path, key)
        return value

    task = registry.get("tasks", chosen("task"), key="task")
    model = registry.get("models", chosen("model.name"), key="model.name")
    schema = _schema(task, model)

    values: dict[str, Any] = {key: param.default for key, param in schema.items()}
    values["name"] = path.stem
    for key, value in file_values.items():
        if key not in schema:
            raise unknown_key_error(key, schema, f" in recipe file '{from_files.origin[key]}'")
        values[key] = coerce(key, value, schema[key], from_text=False)
    for key, text in parsed:
        if key not in schema:
            raise unknown_key_error(key, schema, "")
        values[key] = coerce(key, text, schema[key], from_text=True)

    _check_components(registry, values, schema)
    check_path_name(values["name"], "name")
    config = unflatten(values)
    check_model_inputs(registry, task, model)
    return Recipe(
        name=values["name"],
        source=str(path),
        config=config,
        task=task_of(registry, config),
        model=model,
        requested=name_or_path,
    )


def task_of(registry: Registry, config: Mapping[str, Any]) -> TaskSpec:
    """The recipe's task with the loss its dataset and model keys give, and ``train.calibration``
    checked against it."""
    task = registry.task_of(config)
    check_calibration(config["train"]["calibration"], task.loss, config["train"]["ensemble_size"])
    return task


def check_model_inputs(registry: Registry, task: TaskSpec, model: ModelSpec) -> None:
    """The task can hand the model the input it needs (``ModelSpec.inputs`` among ``TaskSpec.inputs``)."""
    if not model.inputs or model.inputs in task.inputs:
        return
    fitting = sorted(m.name for m in registry.all("models").values() if m.inputs and m.inputs in task.inputs)
    offered = f"it gives {', '.join(task.inputs)}" if task.inputs else "it names no input forms"
    raise UserError(
        f"model '{model.name}' needs input '{model.inputs}', which task '{task.name}' cannot give "
        f"({offered}). Choose a model the task can feed with model.name=..., such as "
        f"{', '.join(fitting) or 'one its plugin registers'}."
    )


def _check_components(registry: Registry, values: Mapping[str, Any], schema: Mapping[str, Param]) -> None:
    """A key whose value names a registered component (``train.optimizer``, say) names one."""
    for key, param in schema.items():
        if param.registry:
            registry.get(param.registry, values[key], key=key)
