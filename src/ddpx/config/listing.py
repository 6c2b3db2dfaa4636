"""``ddpx recipes``: every registered recipe, read cheaply (no torch)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ddpx.contract.recipe_file import read_recipe_file

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


def list_recipes(registry: Registry) -> list[RecipeListing]:
    """Every registered recipe, sorted by name."""
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
