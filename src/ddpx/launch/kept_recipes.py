"""What the candidates of a set kept from an export (``--from-records``) resolve to with this code and
these recipe files, against the settings the export recorded (:mod:`ddpx.records.study_recipes`)."""

from __future__ import annotations

from typing import Any

from ddpx.config.recipe import resolve_recipe
from ddpx.config.study_file import StudySet, StudySpec
from ddpx.contract.errors import UserError
from ddpx.plugin_host.registry import Registry
from ddpx.records.study_recipes import CHANGED, RECIPES, recipe_changes, recipe_settings, without_changes


def with_changes(registry: Registry, spec: StudySpec, name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """A kept set with the settings its candidates resolve to otherwise with this code and these files
    (:data:`CHANGED`, where its export recorded them: :mod:`ddpx.records.study_recipes`)."""
    entry = without_changes(entry)
    declared = next((s for s in spec.sets if s.name == name), None)
    if not entry.get(RECIPES) or declared is None:
        return entry
    changes = recipe_changes(
        entry[RECIPES], {c.name: _settings_now(registry, declared, c, spec.seeds[0]) for c in declared.candidates}
    )
    return {**entry, CHANGED: changes} if changes else entry


def _settings_now(registry: Registry, study_set: StudySet, candidate: Any, seed: int) -> dict[str, Any] | str:
    try:
        recipe = resolve_recipe(registry, candidate.recipe, study_set.overrides_of(candidate, seed))
    except UserError as exc:
        return str(exc).splitlines()[0][:200]
    return recipe_settings(recipe.config, bool(study_set.data))
