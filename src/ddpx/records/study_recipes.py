"""The settings each candidate of a study ran with, as its export records them, and what differs since.

An export names the code a set's runs were made with, but a recipe's contents come from that code
(a built-in recipe) or from a file (a recipe given by path), which may change. So the export records,
for each chosen set, every candidate's resolved recipe (its first seed's, as one flat table of
``section.key`` settings), frozen when the set is chosen. Left out: the seed and the description
(words, not a setting), and the data file's path where the set names its data (its digest is
recorded apart); where the set leaves the data to the recipe, the path is a setting like the others.
A study that keeps a set from an export (``--from-records``) resolves the same candidates with the
code and files it has and names each setting both have whose value differs (a setting only one side
has is an option added or removed since, not a change of value).
"""

from __future__ import annotations

import json
from typing import Any

LEFT_OUT = ("description", "train.seed")  # words, not a setting; the study's seeds, recorded apart
RECIPES = "recipes"  # an exported set's key: candidate name -> its resolved settings
CHANGED = "recipes_changed"  # a kept set's key: the settings that resolve otherwise with this code


def recipe_settings(config: dict[str, Any], data_named: bool) -> dict[str, Any]:
    """A resolved recipe's settings (``Recipe.config``) as one flat table, ``section.key`` -> value (as JSON
    holds it), without :data:`LEFT_OUT`, nor the data's path where the set names its data (``data_named``)."""
    left_out = {*LEFT_OUT, *(["dataset.path"] if data_named else [])}
    flat: dict[str, Any] = {}

    def walk(table: dict[str, Any], prefix: str) -> None:
        for key, value in table.items():
            if isinstance(value, dict):
                walk(value, f"{prefix}{key}.")
            else:
                flat[f"{prefix}{key}"] = json.loads(json.dumps(value))

    walk(config, "")
    return {key: flat[key] for key in sorted(flat) if key not in left_out}


def without_changes(entry: dict[str, Any]) -> dict[str, Any]:
    """A kept set's entry as its export holds it: without :data:`CHANGED`, which is worked out each time."""
    return {key: value for key, value in entry.items() if key != CHANGED}


def recipe_changes(then: dict[str, dict[str, Any]], now: dict[str, dict[str, Any] | str]) -> list[str]:
    """Each setting a candidate had ``then`` (an export's :data:`RECIPES`) whose value is other ``now``;
    a candidate whose recipe no longer resolves is ``now`` a string, the reason."""
    changes = []
    for candidate, settings in then.items():
        current = now.get(candidate)
        if isinstance(current, str):
            changes.append(f"{candidate}: does not resolve now ({current})")
            continue
        for key in sorted(set(settings) & set(current or {})):
            if _differ(settings[key], current[key]):
                changes.append(f"{candidate}: {key} {_text(settings[key])} then, {_text(current[key])} now")
    return changes


def _differ(then: Any, now: Any) -> bool:
    """Other values (``True`` and ``1`` are: Python holds them equal)."""
    return then != now or isinstance(then, bool) != isinstance(now, bool)


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
