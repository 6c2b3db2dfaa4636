"""``ddpx plugins check NAME``: does an installed plugin conform to the contract?

Checks, each reported on its own: the plugin loads; its hook implementations match the specs
(no unknown hooks, no wrong signatures); its registered names clash with no other plugin; and
every recipe it ships — or that uses one of its tasks — builds the dataset and model, trains one
short epoch on 2 CPU ranks with gloo, and produces the task's declared held-out metric (a preset,
a base for other recipes that runs only through them, is not run on its own).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import pluggy

from ddpx.config.recipe_bases import read_with_bases
from ddpx.contract.errors import PluginError, UserError
from ddpx.contract.specs import KINDS
from ddpx.plugin_host.registry import Registry

CHECK_OVERRIDES = ("train.max_epochs=1",)


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


def plugin_names(registry: Registry, name: str) -> list[str]:
    """The loaded or failed plugins called ``name`` or shipped by distribution ``name``."""
    pm = registry.pm
    names = [n for n, info in pm.info.items() if name in (n, info.distribution)]
    names += [e.name for e in pm.load_errors if name in (e.name, e.distribution)]
    if not names:
        known = sorted({*pm.info, *(i.distribution for i in pm.info.values() if i.distribution)})
        raise UserError(f"no plugin or distribution called '{name}' is installed. Known: {', '.join(known)}.")
    return names


def check_plugin(registry: Registry, name: str, nproc: int = 2) -> list[Check]:
    checks: list[Check] = []
    pm = registry.pm
    for plugin in plugin_names(registry, name):
        errors = [e.message for e in pm.load_errors if e.name == plugin]
        if errors:
            checks.append(Check(f"{plugin}: loads", False, errors[0]))
            continue
        checks.append(Check(f"{plugin}: loads", True, f"module {pm.info[plugin].module}"))
        try:
            pm.check_pending()
            checks.append(
                Check(
                    f"{plugin}: hooks match the specs",
                    True,
                    ", ".join(sorted(c.name for c in pm.get_hookcallers(pm.get_plugin(plugin)) or [])),
                )
            )
        except pluggy.PluginValidationError as exc:
            checks.append(Check(f"{plugin}: hooks match the specs", False, str(exc)))
            continue
        owned: dict[str, list[str]] = {}
        try:
            for kind in KINDS:
                owned[kind] = [n for n in registry.all(kind) if registry.owner(kind, n) == plugin]
            checks.append(
                Check(
                    f"{plugin}: names are its own",
                    True,
                    "; ".join(f"{k}: {', '.join(v)}" for k, v in owned.items() if v) or "registers nothing",
                )
            )
        except PluginError as exc:
            checks.append(Check(f"{plugin}: names are its own", False, exc.message))
            continue
        checks += _recipe_runs(registry, plugin, owned, nproc)
    return checks


def _recipe_runs(registry: Registry, plugin: str, owned: dict[str, list[str]], nproc: int) -> list[Check]:
    from ddpx.testing import run_recipe

    read = {name: read_with_bases(registry, Path(source.path)) for name, source in registry.all("recipes").items()}
    task_of = {name: data.values.get("task") for name, data in read.items() if not data.is_preset}
    own_tasks = owned.get("tasks", [])
    own_recipes = {name for name in owned.get("recipes", []) if name in task_of}
    recipes = own_recipes | {name for name, task in task_of.items() if task in own_tasks}
    checks = [
        Check(f"{plugin}: task {t} has a recipe", False, "ship a recipe that uses it, so it can be run and checked")
        for t in own_tasks
        if not any(task_of[r] == t for r in recipes)
    ]
    for recipe in sorted(recipes):
        label = f"{plugin}: recipe {recipe} trains on {nproc} CPU ranks"
        try:
            with tempfile.TemporaryDirectory() as workdir:
                result = run_recipe(recipe, CHECK_OVERRIDES, nproc=nproc, workdir=workdir)
        except Exception as exc:  # report every kind of failure, keep checking the rest
            checks.append(Check(label, False, str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
            continue
        key = f"heldout_{result.summary.metric}"
        passed = key in result.heldout and result.summary.heldout_samples > 0
        checks.append(
            Check(
                label,
                passed,
                f"{key} = {result.heldout.get(key, float('nan')):.4f} over "
                f"{result.summary.heldout_samples} held-out samples",
            )
        )
    return checks
