"""Sweeps: a grid of one recipe's variants, each trial a full distributed job.

``KEY=V1,V2`` arguments span the grid (their cartesian product, in the order given); a plain
``KEY=VALUE`` applies to every trial. Every trial's recipe is resolved and its launch planned
before the first one starts, so a bad value anywhere is an error with nothing started.

The tracker gets one parent run for the sweep, holding the swept keys (``sweep.keys`` and
``sweep.<key>`` with the values tried), and each trial's run is nested under it. A trial that
fails is marked FAILED and the sweep goes on. The best trial is the one with the best *dev*
metric — the held-out split is never used to choose — and the parent records its held-out
metric (``best_heldout_<metric>``), its trial number and how many trials finished and failed.
"""

from __future__ import annotations

import csv
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ddpx.config.recipe import Recipe, resolve_recipe
from ddpx.config.search_space import is_space
from ddpx.config.values import parse_override
from ddpx.contract.errors import UserError
from ddpx.contract.job import Job
from ddpx.contract.launch_settings import LaunchSettings
from ddpx.contract.records import RunSummary
from ddpx.contract.run_dir import DEFAULT_ROOT, RunDir
from ddpx.launch.parallel_trials import Slot, TrialSource, run_side_by_side
from ddpx.launch.plan import plan_job
from ddpx.launch.signals import signals_reach_the_ranks
from ddpx.launch.trial_runs import link_to_parent, run_in_turn
from ddpx.plugin_host.registry import Registry
from ddpx.records.guarded_tracker import GuardedTracker
from ddpx.records.tracking import without_system_metrics


@dataclass
class Trial:
    number: int
    overrides: dict[str, str]  # the swept keys' values for this trial
    recipe: Recipe
    job: Job
    status: str = "PENDING"  # then FINISHED, PRUNED (a search's pruner stopped it) or FAILED
    summary: RunSummary | None = None
    error: str | None = None
    stopped: bool = False  # FAILED because it stopped on request: the same command goes on with it

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.overrides.items())


@dataclass
class Sweep:
    recipe_name: str
    grid: dict[str, list[str]]
    fixed: list[str]
    trials: list[Trial] = field(default_factory=list)
    parent_run_id: str | None = None

    @property
    def failed(self) -> list[Trial]:
        return [t for t in self.trials if t.status == "FAILED"]

    def best(self) -> Trial | None:
        """The finished trial with the best dev metric (ties: the earlier trial)."""
        scored = [
            t
            for t in self.trials
            if t.status == "FINISHED"
            and t.summary
            and t.summary.best_dev is not None
            and not math.isnan(t.summary.best_dev)
        ]  # NaN: an epoch kept by its dev loss, its metric undefined
        if not scored:
            return None
        higher = scored[0].summary.greater_is_better
        return (max if higher else min)(scored, key=lambda t: t.summary.best_dev)  # ties go to the earlier trial


def parse_grid(arguments: tuple[str, ...] | list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Split ``KEY=V1,V2`` (swept) from ``KEY=VALUE`` (fixed) arguments."""
    grid: dict[str, list[str]] = {}
    fixed: list[str] = []
    for text in arguments:
        key, value = parse_override(text)
        if is_space(value):
            raise UserError(
                f"{text} is a search space: add --search optuna --trials N to search it, or list the "
                f"values to try as {key}=V1,V2."
            )
        values = [v.strip() for v in value.split(",")]
        if len(values) == 1:
            fixed.append(f"{key}={value}")
            continue
        if any(not v for v in values):
            raise UserError(f"'{text}' has an empty value between commas; write {key}=V1,V2 with no empty entries.")
        if key in grid:
            raise UserError(f"'{key}' is swept twice; give all its values once: {key}=V1,V2,V3.")
        grid[key] = list(dict.fromkeys(values))
    if not grid:
        raise UserError(
            "a sweep needs at least one swept key: write KEY=V1,V2, for example "
            "`ddpx sweep mlp_synthetic train.lr=0.05,0.1`. To train one variant use `ddpx recipe`."
        )
    return grid, fixed


def plan_sweep(
    registry: Registry, recipe_name: str, arguments: tuple[str, ...] | list[str], settings: LaunchSettings
) -> Sweep:
    """Resolve and plan every trial; any mistake is raised before anything starts."""
    grid, fixed = parse_grid(arguments)
    sweep = Sweep(recipe_name=recipe_name, grid=grid, fixed=fixed)
    keys = list(grid)
    for number, values in enumerate(itertools.product(*(grid[k] for k in keys)), start=1):
        overrides = dict(zip(keys, values))
        recipe = resolve_recipe(registry, recipe_name, [*fixed, *(f"{k}={v}" for k, v in overrides.items())])
        sweep.trials.append(Trial(number, overrides, recipe, plan_job(registry, recipe, settings)))
    check_waits(registry, sweep.trials[0].job)
    return sweep


def check_waits(registry: Registry, job: Job) -> None:
    """A sweep needs each trial's result before the next starts: a launcher that hands the job over
    and returns cannot run one."""
    launcher = registry.get("launchers", job.launch.launcher)
    if not launcher.hands_over(job):
        return
    wait = " add --wait, or" if any(option.name == "wait" for option in launcher.options) else ""
    raise UserError(
        f"a sweep needs each trial's result before the next starts, but --launcher {launcher.name} "
        f"would hand each trial over and return:{wait} use a launcher that waits for its ranks."
    )


def _parent_params(sweep: Sweep) -> dict[str, Any]:
    params: dict[str, Any] = {
        "sweep.recipe": sweep.recipe_name,
        "sweep.keys": ",".join(sweep.grid),
        "sweep.trials": len(sweep.trials),
    }
    params.update({f"sweep.{key}": ",".join(values) for key, values in sweep.grid.items()})
    params.update({f"sweep.fixed.{k}": v for k, v in (parse_override(text) for text in sweep.fixed)})
    first = sweep.trials[0].job
    params.update({"launcher": first.launch.launcher, "backend": first.launch.backend, "world_size": first.world_size})
    return params


def write_trials_csv(sweep: Sweep, path: Path) -> Path:
    """One row per trial: number, swept values, status, dev and held-out metric, run folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trial", *sweep.grid, "status", "dev_metric", "heldout_metric", "run_dir", "error"])
        for t in sweep.trials:
            writer.writerow(
                [
                    t.number,
                    *t.overrides.values(),
                    t.status,
                    t.summary.best_dev if t.summary else "",
                    t.summary.heldout_metric[1] if t.summary else "",
                    t.job.run_dir.path if t.job.run_dir else "",
                    t.error or "",
                ]
            )
    return path


class PlannedTrials:
    """A grid's trials, in order (a :class:`~ddpx.launch.parallel_trials.TrialSource`)."""

    def __init__(self, trials: list[Trial]):
        self._left = list(trials)

    def next(self) -> Trial | None:
        return self._left.pop(0) if self._left else None

    def more(self) -> bool:
        return bool(self._left)

    def finish(self, trial: Trial) -> None:
        pass


def run_sweep(
    registry: Registry,
    sweep: Sweep,
    report: Callable[[Trial], None],
    warn: Callable[[str], None],
    source: TrialSource | None = None,
    extra_params: dict[str, Any] | None = None,
    artifacts: Callable[[], list[Path]] | None = None,
    parent_run_id: str | None = None,
    slots: list[Slot] | None = None,
) -> Sweep:
    """Run the trials under one parent tracking run: the planned grid, or ``source``'s as a search
    produces them (each appended to ``sweep.trials`` before it runs); one after another, or with
    ``slots`` (:func:`~ddpx.launch.parallel_trials.plan_slots`) one per slot at a time.
    ``artifacts()`` gives files for the parent run once the trials are done; ``parent_run_id``
    continues that parent run (a resumed search)."""
    first = sweep.trials[0].job
    parent_job = replace(
        without_system_metrics(first), run_dir=RunDir(Path(first.launch.runs_dir or DEFAULT_ROOT).resolve())
    )
    parent = GuardedTracker(registry.get("trackers", first.launch.tracking).create(parent_job), warn=warn)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    metric = registry.get("metrics", sweep.trials[0].recipe.task.metric)
    parent.start(
        run_name=f"sweep-{sweep.trials[0].recipe.name}-{stamp}",
        params={**_parent_params(sweep), "sweep.parallel": len(slots or [None]), **(extra_params or {})},
        tags={
            "ddpx.recipe": sweep.trials[0].recipe.name,
            "ddpx.sweep": "parent",
            "ddpx.metric": f"heldout_{metric.name}",
            "ddpx.metric_direction": "max" if metric.greater_is_better else "min",
        },
        resume_run_id=parent_run_id,
    )
    sweep.parent_run_id = parent.run_id
    source = source or PlannedTrials(sweep.trials)
    try:
        if slots and len(slots) > 1:
            run_side_by_side(registry, source, slots, lambda trial: link_to_parent(trial, parent.run_id), report)
        else:
            with signals_reach_the_ranks():  # SIGUSR1 or SIGTERM between two trials too
                run_in_turn(registry, source, lambda trial: link_to_parent(trial, parent.run_id), report)
    except BaseException as exc:
        parent.finish("KILLED", error=f"the sweep was stopped: {exc}")
        raise
    for path in artifacts() if artifacts is not None else []:
        parent.log_artifact(path, "search")
    _finish_parent(parent, sweep)
    return sweep


def _finish_parent(parent: GuardedTracker, sweep: Sweep) -> None:
    metrics: dict[str, float] = {
        "trials_finished": float(sum(t.status == "FINISHED" for t in sweep.trials)),
        "trials_failed": float(len(sweep.failed)),
        "trials_pruned": float(sum(t.status == "PRUNED" for t in sweep.trials)),
    }
    best = sweep.best()
    if best is not None:
        name, value = best.summary.heldout_metric
        metrics[f"best_{name}"] = value
        metrics[f"best_dev_{best.summary.metric}"] = best.summary.best_dev
        metrics["best_trial"] = float(best.number)
        parent.set_tags({f"ddpx.best.{key}": value for key, value in best.overrides.items()})
    parent.log_metrics(metrics)
    if sweep.trials and sweep.trials[0].job.run_dir is not None:
        base = sweep.trials[0].job.run_dir.path.parent
        parent.log_artifact(write_trials_csv(sweep, base / f"sweep-{parent.run_id or 'untracked'}.csv"))
    failed = ", ".join(str(t.number) for t in sweep.failed)
    parent.finish(
        "FAILED" if sweep.failed else "FINISHED",
        error=f"trial(s) {failed} failed; see each trial's run" if failed else None,
    )
