"""``ddpx recipes``: every registered recipe, read cheaply (no torch), presets apart."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ddpx.config.recipe_bases import read_with_bases

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.plugin_host.registry import Registry


@dataclass(frozen=True)
class RecipeListing:
    """One row of ``ddpx recipes``."""

    name: str
    task: str
    model: str
    metric: str
    description: str
    plugin: str


def list_recipes(registry: Registry, presets: bool = False) -> list[RecipeListing]:
    """Every registered recipe one can run, sorted by name; with ``presets``, the presets instead
    (:mod:`ddpx.config.recipe_bases`: recipes that name no task or no model, bases for others)."""
    rows = []
    tasks = registry.all("tasks")
    for name, source in sorted(registry.all("recipes").items()):
        data = read_with_bases(registry, Path(source.path))
        if data.is_preset != presets:
            continue
        task_name = str(data.values.get("task", ""))
        task = tasks.get(task_name)
        rows.append(
            RecipeListing(
                name=name,
                task=task_name,
                model=str(data.values.get("model.name", "")),
                metric=f"heldout_{task.metric}" if task else "?",
                description=str(data.values.get("description", "")),
                plugin=registry.owner("recipes", name),
            )
        )
    return rows
