"""Searches: ``ddpx sweep RECIPE KEY=loguniform(1e-4,1e-1) ... --search optuna --trials N``.

Optuna chooses each trial's values from the search space (:mod:`ddpx.config.search_space`; a
comma grid ``KEY=A,B`` is a choice) with the chosen sampler; every trial is a full distributed
job, nested in MLflow under the search's parent run like a grid sweep's trials. The study lives
in an sqlite file of its own (``ddpx-runs/optuna.db`` unless ``--study-storage`` names one), so
Optuna's tools can read it. Its direction is the task metric's. After every epoch rank 0 reports
the dev metric to the trial and the pruner decides for every rank (:mod:`ddpx.rank.loop.pruning`).

Everything is checked before the first trial starts: the space, each key (resolved at each
bound and choice), the launch.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ddpx.config.recipe import resolve_recipe
from ddpx.config.search_space import build_pruner, corners, parse_space_arguments, pruner_warmup
from ddpx.contract.errors import UserError
from ddpx.contract.launch_settings import LaunchSettings
from ddpx.contract.records import RunSummary
from ddpx.contract.run_dir import DEFAULT_ROOT, RunDir
from ddpx.launch.plan import plan_job
from ddpx.launch.sweep import Sweep, Trial
from ddpx.plugin_host.registry import Registry

SAMPLERS = ("tpe", "random", "grid")
PRUNERS = ("median", "hyperband", "none")


@dataclass(frozen=True)
class SearchOptions:
    trials: int | None = None  # None: the grid sampler's whole grid
    sampler: str = "tpe"
    pruner: str = "median"
    pruner_warmup: int | None = None  # epochs before a trial may be pruned; None: a fifth of train.max_epochs
    timeout_s: float | None = None
    seed: int | None = None
    storage: str | None = None
    resume: bool = False  # continue this recipe's latest study in the storage


@dataclass
class Search:
    sweep: Sweep
    space: dict[str, Any]  # key → Optuna distribution
    texts: dict[str, str]  # key → the space as the user wrote it
    options: SearchOptions
    settings: LaunchSettings
    storage: str
    direction: str
    interrupted: int = 0  # a resumed study's trials that were cut off (marked FAIL, queued again)


def default_storage(settings: LaunchSettings) -> str:
    """``sqlite:///<run folders' parent>/optuna.db`` (the folder is made when the study is)."""
    return f"sqlite:///{Path(settings.runs_dir or DEFAULT_ROOT).resolve() / 'optuna.db'}"


def plan_search(
    registry: Registry, recipe_name: str, arguments, settings: LaunchSettings, options: SearchOptions
) -> Search:
    """Check the space, every key at every bound and choice, and the launch; nothing is started."""
    from optuna.distributions import CategoricalDistribution

    space, texts, fixed = parse_space_arguments(arguments)
    check_options(options)
    sweep = Sweep(recipe_name=recipe_name, grid={k: [t] for k, t in texts.items()}, fixed=fixed)
    for values in corners(space):
        recipe = resolve_recipe(registry, recipe_name, [*fixed, *(f"{k}={v}" for k, v in values.items())])
        job = plan_job(registry, recipe, settings)
    sweep.trials.append(Trial(0, values, recipe, job))  # a stand-in: the parent run's settings come from it
    if options.sampler == "grid" and not all(isinstance(d, CategoricalDistribution) for d in space.values()):
        raise UserError("--sampler grid needs a space of choices only (KEY=A,B or KEY=choice(A,B)).")
    metric = registry.get("metrics", recipe.task.metric)
    return Search(
        sweep=sweep,
        space=space,
        texts=texts,
        options=options,
        settings=settings,
        storage=options.storage or default_storage(settings),
        direction="maximize" if metric.greater_is_better else "minimize",
    )


def check_options(options: SearchOptions) -> None:
    if options.sampler not in SAMPLERS:
        raise UserError(f"unknown sampler '{options.sampler}'; use one of {', '.join(SAMPLERS)}.")
    if options.pruner not in PRUNERS:
        raise UserError(f"unknown pruner '{options.pruner}'; use one of {', '.join(PRUNERS)}.")
    if options.pruner_warmup is not None and options.pruner_warmup < 0:
        raise UserError(f"--pruner-warmup must be 0 or more epochs, not {options.pruner_warmup}.")
    if options.trials is not None and options.trials < 1:
        raise UserError(f"--trials must be at least 1, not {options.trials}.")
    if options.trials is None and options.sampler != "grid":
        raise UserError(f"--search optuna with --sampler {options.sampler} needs --trials N (how many to run).")


def create_study(search: Search, max_epochs: int):
    """A new study, or with ``--resume`` this recipe's latest one: its interrupted trials (still
    RUNNING) are marked FAIL and their values queued to run again."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # ddpx says what the study is and does
    if search.storage == default_storage(search.settings):
        Path(search.storage.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    options = search.options
    pruner = build_pruner(options.pruner, max_epochs, pruner_warmup(options.pruner_warmup, max_epochs))
    recipe = search.sweep.trials[0].recipe.name
    if not options.resume:
        name = f"{recipe}-{time.strftime('%Y%m%d-%H%M%S')}"
        return optuna.create_study(
            storage=search.storage,
            study_name=name,
            direction=search.direction,
            sampler=build_sampler(search, 0),
            pruner=pruner,
        )
    earlier = [s for s in optuna.get_all_study_summaries(search.storage) if s.study_name.startswith(f"{recipe}-")]
    if not earlier:
        raise UserError(
            f"--resume: no earlier search of {recipe} in {search.storage}. Start one without --resume "
            "(or give --study-storage the storage it used)."
        )
    latest = max(earlier, key=lambda s: s.study_name)  # names end with their start time
    study = optuna.load_study(
        study_name=latest.study_name,
        storage=search.storage,
        pruner=pruner,
        sampler=build_sampler(search, latest.n_trials),
    )
    storage = optuna.storages.get_storage(search.storage)
    for interrupted in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        storage.set_trial_state_values(interrupted._trial_id, optuna.trial.TrialState.FAIL)
        study.enqueue_trial(interrupted.params)
        search.interrupted += 1
    return study


def build_sampler(search: Search, trials_so_far: int):
    """The sampler; a seeded one resumed after N trials is seeded N further on, so it does not
    draw the first trials' values again."""
    import optuna

    options = search.options
    seed = None if options.seed is None else options.seed + trials_so_far
    if options.sampler == "grid":
        return optuna.samplers.GridSampler({k: list(d.choices) for k, d in search.space.items()}, seed=seed)
    return (optuna.samplers.TPESampler if options.sampler == "tpe" else optuna.samplers.RandomSampler)(seed=seed)


def earlier_trials(registry: Registry, search: Search, study) -> list[Trial]:
    """A resumed study's finished trials, read back from their run folders (for the best trial)."""
    from optuna.trial import TrialState

    done = []
    for frozen in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
        folder = frozen.user_attrs.get("ddpx.run_dir")
        if not folder or not RunDir(Path(folder)).summary_file.is_file():
            continue
        values = {k: str(v) for k, v in frozen.params.items()}
        recipe = resolve_recipe(
            registry, search.sweep.recipe_name, [*search.sweep.fixed, *(f"{k}={v}" for k, v in values.items())]
        )
        trial = Trial(
            frozen.number + 1,
            values,
            recipe,
            plan_job(registry, recipe, search.settings),
            status="PRUNED" if frozen.state == TrialState.PRUNED else "FINISHED",
        )
        trial.job.run_dir = RunDir(Path(folder))
        trial.summary = RunSummary.read(trial.job.run_dir.summary_file)
        done.append(trial)
    return done


class StudyTrials:
    """The trials Optuna asks for, one at a time (a :class:`~ddpx.launch.parallel_trials.TrialSource`):
    each told to the study as it ends; a resumed study runs only the trials it still lacks. With
    trials side by side, Optuna is asked for the next values when a slot frees, so they follow
    every trial that ended before."""

    def __init__(self, registry: Registry, search: Search, study):
        import optuna

        self.registry, self.search, self.study, self.started = registry, search, study, time.monotonic()
        self.left: int | None = None  # counted as the first trial is asked for (the sweep's stand-in goes then)
        self.asked: dict[int, Any] = {}
        self.storage = optuna.storages.get_storage(search.storage)

    def _count(self) -> int:
        """Trials still to run; the sweep's list starts with a resumed study's finished ones."""
        from optuna.trial import TrialState

        search, options = self.search, self.search.options
        total = options.trials or math.prod(len(d.choices) for d in search.space.values())  # the grid sampler's
        search.sweep.trials[:] = earlier_trials(self.registry, search, self.study) if options.resume else []
        ended = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
        return total - (len(self.study.get_trials(deepcopy=False, states=ended)) - search.interrupted)

    def more(self) -> bool:
        """Whether the search has trials left to ask for (its count, its time)."""
        timeout = self.search.options.timeout_s
        if self.left is None:
            self.left = self._count()
        return self.left > 0 and (timeout is None or time.monotonic() - self.started <= timeout)

    def next(self) -> Trial | None:
        search, options = self.search, self.search.options
        if not self.more():
            return None
        self.left -= 1
        if search.sweep.parent_run_id:
            self.study.set_user_attr("ddpx.parent_run_id", search.sweep.parent_run_id)
        asked = self.study.ask(search.space)
        values = {k: str(v) for k, v in asked.params.items()}
        recipe = resolve_recipe(
            self.registry, search.sweep.recipe_name, [*search.sweep.fixed, *(f"{k}={v}" for k, v in values.items())]
        )
        trial = Trial(asked.number + 1, values, recipe, plan_job(self.registry, recipe, search.settings))
        trial.job.search = {
            "storage": search.storage,
            "study": self.study.study_name,
            "trial_id": asked._trial_id,
            "pruner": options.pruner,
            "max_epochs": recipe.train["max_epochs"],
            "pruner_warmup": pruner_warmup(options.pruner_warmup, recipe.train["max_epochs"]),
        }
        search.sweep.trials.append(trial)
        self.asked[trial.number] = asked
        return trial

    def finish(self, trial: Trial) -> None:
        asked = self.asked.pop(trial.number)
        if trial.job.run_dir is not None:
            self.storage.set_trial_user_attr(asked._trial_id, "ddpx.run_dir", str(trial.job.run_dir.path))
        tell(self.study, asked, trial)


def tell(study, asked, trial: Trial) -> None:
    from optuna.trial import TrialState

    if trial.status == "FINISHED" and trial.summary.best_dev is not None:
        study.tell(asked, trial.summary.best_dev)
    elif trial.status == "PRUNED":
        study.tell(asked, state=TrialState.PRUNED)
    else:
        study.tell(asked, state=TrialState.FAIL)


def parent_run_of(study) -> str | None:
    """The MLflow parent run a resumed study continues."""
    return study.user_attrs.get("ddpx.parent_run_id")


def search_params(search: Search, study) -> dict[str, Any]:
    """What the parent run records about the search, beside the swept keys."""
    options = search.options
    return {
        "sweep.search": "optuna",
        "sweep.sampler": options.sampler,
        "sweep.pruner": options.pruner,
        "sweep.pruner_warmup": "max_epochs/5" if options.pruner_warmup is None else options.pruner_warmup,
        "sweep.study": study.study_name,
        "sweep.study_storage": search.storage,
        "sweep.trials": options.trials or "grid",
    }
