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
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from ddpx.core.config import parse_override
from ddpx.core.errors import JobFailed, UserError
from ddpx.core.job import Job
from ddpx.core.launching import LaunchOptions, plan_job, run_job
from ddpx.core.recipes import Recipe, resolve_recipe
from ddpx.core.registry import Registry
from ddpx.core.tracking import GuardedTracker


@dataclass
class Trial:
    number: int
    overrides: dict[str, str]  # the swept keys' values for this trial
    recipe: Recipe
    job: Job
    status: str = "PENDING"  # then FINISHED or FAILED
    summary: dict[str, Any] | None = None
    error: str | None = None

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
        finished = [t for t in self.trials if t.status == "FINISHED" and t.summary]
        scored = [t for t in finished if _dev_metric(t) is not None]
        if not scored:
            return None
        higher = scored[0].summary["extra"].get("greater_is_better", True)
        return (max if higher else min)(scored, key=_dev_metric)  # the first best: ties go to the earlier trial


def _dev_metric(trial: Trial) -> float | None:
    extra = trial.summary["extra"]
    return extra.get(f"best_dev_{extra['metric']}")


def parse_grid(arguments: tuple[str, ...] | list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Split ``KEY=V1,V2`` (swept) from ``KEY=VALUE`` (fixed) arguments."""
    grid: dict[str, list[str]] = {}
    fixed: list[str] = []
    for text in arguments:
        key, value = parse_override(text)
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
        raise UserError("a sweep needs at least one swept key: write KEY=V1,V2, for example "
                        "`ddpx sweep mlp_synthetic train.lr=0.05,0.1`. To train one variant use `ddpx recipe`.")
    return grid, fixed


def plan_sweep(registry: Registry, recipe_name: str, arguments: tuple[str, ...] | list[str],
               options: LaunchOptions) -> Sweep:
    """Resolve and plan every trial; any mistake is raised before anything starts."""
    grid, fixed = parse_grid(arguments)
    sweep = Sweep(recipe_name=recipe_name, grid=grid, fixed=fixed)
    launcher = registry.get("launchers", options.launcher, key="--launcher")
    if launcher.submits is not None and launcher.submits() and not options.launcher_options.get("wait"):
        raise UserError(f"a sweep needs each trial's result before the next starts: add --wait to run it with "
                        f"--launcher {options.launcher}.")
    keys = list(grid)
    for number, values in enumerate(itertools.product(*(grid[k] for k in keys)), start=1):
        overrides = dict(zip(keys, values))
        recipe = resolve_recipe(registry, recipe_name, [*fixed, *(f"{k}={v}" for k, v in overrides.items())])
        sweep.trials.append(Trial(number, overrides, recipe, plan_job(registry, recipe, options)))
    return sweep


def _parent_params(sweep: Sweep) -> dict[str, Any]:
    params: dict[str, Any] = {"sweep.recipe": sweep.recipe_name, "sweep.keys": ",".join(sweep.grid),
                              "sweep.trials": len(sweep.trials)}
    params.update({f"sweep.{key}": ",".join(values) for key, values in sweep.grid.items()})
    params.update({f"sweep.fixed.{k}": v for k, v in (parse_override(text) for text in sweep.fixed)})
    first = sweep.trials[0].job
    params.update({"launcher": first.launcher, "backend": first.backend, "world_size": first.world_size})
    return params


def write_trials_csv(sweep: Sweep, path: Path) -> Path:
    """One row per trial: number, swept values, status, dev and held-out metric, run folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["trial", *sweep.grid, "status", "dev_metric", "heldout_metric", "run_dir", "error"])
        for t in sweep.trials:
            heldout = heldout_metric(t)
            writer.writerow([t.number, *t.overrides.values(), t.status,
                             _dev_metric(t) if t.summary else "", heldout[1] if heldout else "",
                             t.job.run_dir, t.error or ""])
    return path


def heldout_metric(trial: Trial) -> tuple[str, float] | None:
    """The finished trial's held-out metric as ``(name, value)``; ``None`` for a trial without a result."""
    if not trial.summary:
        return None
    name = f"heldout_{trial.summary['extra']['metric']}"
    return name, trial.summary["heldout"][name]


def run_sweep(registry: Registry, sweep: Sweep, options: LaunchOptions,
              report: Callable[[Trial], None], warn: Callable[[str], None]) -> Sweep:
    """Run the trials one after another under one parent tracking run."""
    first = sweep.trials[0].job
    parent_job = replace(first, system_metrics=False, run_dir=str(Path(options.run_dir or "ddpx-runs").resolve()))
    parent = GuardedTracker(registry.get("trackers", first.tracking).create(parent_job), warn=warn)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    parent.start(run_name=f"sweep-{sweep.trials[0].recipe.name}-{stamp}", params=_parent_params(sweep),
                 tags={"ddpx.recipe": sweep.trials[0].recipe.name, "ddpx.sweep": "parent"})
    sweep.parent_run_id = parent.run_id
    try:
        for trial in sweep.trials:
            trial.job.parent_run_id = parent.run_id
            trial.job.tags = {"ddpx.sweep.trial": str(trial.number), "ddpx.sweep.parent": parent.run_id or ""}
            try:
                trial.summary = run_job(registry, trial.recipe, trial.job, options.run_dir)
                trial.status = "FINISHED"
            except JobFailed as exc:
                if exc.exit_code == 130:  # Ctrl-C stops the whole sweep
                    trial.status, trial.error = "FAILED", str(exc)
                    raise
                trial.status, trial.error = "FAILED", str(exc)
            report(trial)
    except BaseException as exc:
        parent.finish("KILLED", error=f"the sweep was stopped: {exc}")
        raise
    _finish_parent(parent, sweep)
    return sweep


def _finish_parent(parent: GuardedTracker, sweep: Sweep) -> None:
    metrics: dict[str, float] = {"trials_finished": float(sum(t.status == "FINISHED" for t in sweep.trials)),
                                 "trials_failed": float(len(sweep.failed))}
    best = sweep.best()
    if best is not None:
        name, value = heldout_metric(best)
        metrics[f"best_{name}"] = value
        metrics[f"best_dev_{best.summary['extra']['metric']}"] = _dev_metric(best)
        metrics["best_trial"] = float(best.number)
    parent.log_metrics(metrics)
    base = Path(sweep.trials[0].job.run_dir).parent
    parent.log_artifact(write_trials_csv(sweep, base / f"sweep-{parent.run_id or 'untracked'}.csv"))
    failed = ", ".join(str(t.number) for t in sweep.failed)
    parent.finish("FAILED" if sweep.failed else "FINISHED",
                  error=f"trial(s) {failed} failed; see each trial's run" if failed else None)
