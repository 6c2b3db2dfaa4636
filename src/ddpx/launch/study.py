"""Studies: every (set, candidate, seed) of a study file run through the real runner, resumable.

Every run's recipe is resolved and its launch planned before the first starts. A run whose key
(its resolved recipe, its data's digest, the code's digest) matches a finished run of any study
is reused, so a study stopped by Ctrl-C, a crash or the end of a day goes on where it stopped,
and a run of other code is never mixed in; a run of the same key that was cut off goes on in its
own folder from its last checkpoint (the same weights as a run never stopped). The tracker gets
one parent run for the study with every run nested under it. As soon as every run of a set has
finished, that set's choice is made on dev values alone (among its candidates but its baseline,
which is never chosen), written to ``choice.json`` and to the parent run, and only then are its
held-out values readable (:class:`~ddpx.records.study_records.RecordedChoice`): a long study's
first sets can be reported, and their records committed, while its later sets run. A set's choice
is made once and kept.
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

from ddpx.config.recipe import resolve_recipe
from ddpx.config.study_file import StudySet, StudySpec
from ddpx.contract.launch_settings import LaunchSettings
from ddpx.contract.run_dir import DEFAULT_ROOT, RunDir
from ddpx.launch.chosen_runs import refuse_changed_runs
from ddpx.launch.kept_recipes import with_changes
from ddpx.launch.parallel_trials import Slot, run_side_by_side
from ddpx.launch.plan import plan_job
from ddpx.launch.run import new_run_dir
from ddpx.launch.signals import signals_reach_the_ranks
from ddpx.launch.sweep import PlannedTrials, Trial, check_waits
from ddpx.launch.trial_runs import link_to_parent, run_in_turn
from ddpx.plugin_host.registry import Registry
from ddpx.records.guarded_tracker import GuardedTracker
from ddpx.records.study_kept import merged_kept
from ddpx.records.study_recipes import recipe_settings
from ddpx.records.study_records import (
    RecordedChoice,
    RunRecord,
    StudyDir,
    choose,
    code_version,
    data_digest,
    run_key,
)
from ddpx.records.tracking import without_system_metrics

LIBRARIES = ("torch", "mlflow", "optuna", "scikit-learn", "rdkit", "chemprop")


@dataclass
class StudyTrial(Trial):
    key: str = ""
    set_name: str = ""
    candidate: str = ""
    seed: int = 0
    reused: RunRecord | None = None  # a finished run of the same key, from this or an earlier study
    continues: Path | None = None  # the folder of a run of the same key that was cut off, to go on in


@dataclass
class Study:
    spec: StudySpec
    folder: StudyDir
    code: dict[str, str]
    trials: list[StudyTrial] = field(default_factory=list)
    parent_run_id: str | None = None
    kept: dict[str, dict[str, Any]] = field(default_factory=dict)  # sets kept from an earlier export, by name
    recipes: dict[str, dict[str, Any]] = field(default_factory=dict)  # set -> candidate -> its first seed's settings

    @property
    def to_run(self) -> list[StudyTrial]:
        return [t for t in self.trials if t.reused is None]

    def records(self) -> list[RunRecord]:
        """Every finished run of this study (reused or new), in the file's order."""
        return [t.reused for t in self.trials if t.reused is not None]


class StudyUnfinished(Exception):
    """Runs of the study failed, so its choice was not made; ``trials``: those runs."""

    def __init__(self, trials: list[StudyTrial]):
        super().__init__(f"{len(trials)} run(s) failed")
        self.trials = trials


def plan_study(
    registry: Registry, spec: StudySpec, settings: LaunchSettings, kept: dict[str, dict[str, Any]] | None = None
) -> Study:
    """Resolve and plan every run of the sets not ``kept`` from an earlier export (by default, those
    the study's folder kept when it began); any mistake is raised before anything starts."""
    code = code_version()
    root = Path(settings.runs_dir or DEFAULT_ROOT).resolve() / "studies"
    study = Study(spec, StudyDir(root, spec.name, spec.digest, code["code_digest"]), code)
    earlier = study.folder.kept_sets()
    study.kept = earlier if kept is None else merged_kept(earlier, kept, chosen_sets(study))
    study.kept = {name: with_changes(registry, spec, name, entry) for name, entry in study.kept.items()}
    finished, cut_off, digests = study.folder.finished(), study.folder.interrupted(), {}
    for study_set in (s for s in spec.sets if s.name not in study.kept):
        for candidate in study_set.candidates:
            for seed in spec.seeds:
                recipe = resolve_recipe(registry, candidate.recipe, study_set.overrides_of(candidate, seed))
                if seed == spec.seeds[0]:
                    study.recipes.setdefault(study_set.name, {})[candidate.name] = recipe_settings(
                        recipe.config, bool(study_set.data)
                    )
                data = str(recipe.config["dataset"].get("path") or "")
                if data not in digests:
                    digests[data] = data_digest(data)
                key = run_key(recipe.to_toml(), digests[data], code["code_digest"])
                labels = {"set": study_set.name, "candidate": candidate.name, "seed": str(seed)}
                trial = StudyTrial(len(study.trials) + 1, labels, recipe, plan_job(registry, recipe, settings))
                trial.key, trial.set_name, trial.candidate, trial.seed = key, study_set.name, candidate.name, seed
                trial.reused = finished.get(key)
                trial.continues = cut_off.get(key) if trial.reused is None else None
                study.trials.append(trial)
    chosen = chosen_sets(study)  # a chosen set stands on its runs; its settings are those it was chosen under
    refuse_changed_runs(spec, study.folder, study.trials, chosen)
    study.recipes.update({name: found for name, found in study.folder.recipes().items() if name in chosen})
    if study.trials:
        check_waits(registry, study.trials[0].job)
    return study


def _versions() -> dict[str, str]:
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found


def study_info(study: Study) -> dict[str, Any]:
    """What the study records about itself: the file, the code, the machine, the libraries."""
    return {
        "study.name": study.spec.name,
        "study.file": str(study.spec.path),
        "study.digest": study.spec.digest,
        "study.rule": study.spec.rule,
        "study.seeds": ",".join(map(str, study.spec.seeds)),
        "study.sets": ",".join(s.name for s in study.spec.sets),
        "study.runs": len(study.trials),
        **({"study.kept_sets": ",".join(study.kept)} if study.kept else {}),
        **{f"code.{k}": v for k, v in study.code.items()},
        "machine": f"{platform.node()} {platform.machine()} {platform.processor() or ''}".strip(),
        "python": sys.version.split()[0],
        **{f"library.{k}": v for k, v in _versions().items()},
    }


def open_parent(registry: Registry, study: Study, warn: Callable[[str], None]) -> GuardedTracker:
    first = study.trials[0].job
    parent_job = replace(
        without_system_metrics(first), run_dir=RunDir(Path(first.launch.runs_dir or DEFAULT_ROOT).resolve())
    )
    parent = GuardedTracker(registry.get("trackers", first.launch.tracking).create(parent_job), warn=warn)
    info = study_info(study)
    study.folder.create(study.spec.text, {k: str(v) for k, v in info.items()})
    study.folder.keep_sets(study.kept)
    study.folder.keep_recipes(study.recipes)
    if study.kept:
        study.folder.note(**{"study.kept_sets": ",".join(study.kept)})
    study.folder.start_runs(study.records())
    parent.start(
        run_name=f"study-{study.spec.name}-{time.strftime('%Y%m%d-%H%M%S')}",
        params=info,
        tags={"ddpx.study": "parent", "ddpx.study.name": study.spec.name, "ddpx.study.folder": str(study.folder.path)},
        resume_run_id=study.folder.info().get("parent_run_id"),
    )
    if study.kept:  # a tag, which a resumed parent run takes too (its params were logged when it began)
        parent.set_tags({"ddpx.study.kept_sets": ",".join(study.kept)})
    study.parent_run_id = parent.run_id
    study.folder.note(parent_run_id=parent.run_id)
    parent.log_artifact(study.folder.path / "study.toml", "study")
    return parent


def run_study(
    registry: Registry,
    study: Study,
    report: Callable[[StudyTrial], None],
    warn: Callable[[str], None],
    slots: list[Slot] | None = None,
    choose_with_failures: bool = False,
    chose: Callable[[RecordedChoice, list[str]], None] = lambda recorded, sets: None,
) -> RecordedChoice:
    """Run what is not finished yet, under one parent run, choosing each set on dev as soon as its
    runs have all finished (``chose(recorded, sets)`` hears of each new choice). A failed run holds
    its set's choice back (:class:`StudyUnfinished`): a choice is made once and kept, so a run that
    failed once must not leave its candidate out of it for good; the same command reruns what
    failed. ``choose_with_failures`` chooses the sets left anyway, among the candidates whose every
    seed finished. A stop on request (SIGUSR1) lets the running runs checkpoint and starts no other:
    a JobFailed (exit 75), and the same command continues those runs from their checkpoints."""
    parent = open_parent(registry, study, warn)

    def choose_finished(everything: bool = False) -> RecordedChoice:
        recorded, sets = record_choices(study, parent, everything)
        if sets:
            chose(recorded, sets)
        return recorded

    def ended(trial: StudyTrial) -> None:
        if trial.status == "FINISHED" and trial.summary is not None:
            trial.reused = RunRecord.of(trial.set_name, trial.candidate, trial.seed, trial.key, trial.summary)
            study.folder.add(trial.reused)
        report(trial)
        choose_finished()

    def begin(trial: StudyTrial) -> None:
        if trial.continues is not None:  # its ranks go on from the folder's last checkpoint
            trial.job.run_dir = RunDir(trial.continues)
        else:
            trial.job.run_dir = new_run_dir(trial.recipe, trial.job.launch.runs_dir)
            study.folder.started(trial.key, trial.job.run_dir.path)
        link_to_parent(trial, parent.run_id)
        trial.job.tags = {**trial.job.tags, "ddpx.study.set": trial.set_name, "ddpx.study.candidate": trial.candidate}

    try:
        choose_finished()  # sets whose runs all finished earlier
        with signals_reach_the_ranks():  # SIGTERM between two runs stops the study as Ctrl-C does; SIGUSR1 too
            if slots and len(slots) > 1:
                run_side_by_side(registry, PlannedTrials(study.to_run), slots, begin, ended, noun="run")
            else:
                run_in_turn(registry, PlannedTrials(study.to_run), begin, ended)
    except BaseException as exc:
        parent.finish("KILLED", error=f"the study was stopped: {exc}; the same command goes on where it stopped")
        raise
    failed = [t for t in study.trials if t.reused is None]
    decided = set(chosen_sets(study)) | set(study.kept)
    if failed and not choose_with_failures and not {s.name for s in study.spec.sets} <= decided:
        parent.finish("FAILED", error=f"{len(failed)} run(s) failed: their sets' choice waits until they have finished")
        raise StudyUnfinished(failed)
    recorded = choose_finished(everything=True)
    parent.finish("FAILED" if failed else "FINISHED", error=f"{len(failed)} run(s) failed" if failed else None)
    return recorded


def chosen_sets(study: Study) -> dict[str, Any]:
    """The choice recorded so far, by set (none before the first set's)."""
    return RecordedChoice.read(study.folder).choice if (study.folder.path / "choice.json").is_file() else {}


def record_choices(study: Study, parent: GuardedTracker, everything: bool = False) -> tuple[RecordedChoice, list[str]]:
    """Choose, on dev values alone, each set not chosen yet whose every run has finished (``everything``:
    every set not chosen yet, among its candidates whose every seed finished); write the choice to disk
    and to the parent run. Sets chosen earlier keep their choice: the same file and code never choose a
    set again. Returns the choice recorded and the sets chosen now."""
    kept, records = chosen_sets(study), study.records()
    finished = {t.set_name for t in study.trials} - {t.set_name for t in study.trials if t.reused is None}
    new = {
        study_set.name: set_choice(study_set, records, study.spec.seeds)
        for study_set in study.spec.sets
        if study_set.name not in kept
        and study_set.name not in study.kept
        and (everything or study_set.name in finished)
    }
    if not new:
        return RecordedChoice(study.folder, kept), []
    recorded = study.folder.record_choice({**kept, **new}, now=sorted(new))
    parent.set_tags({f"ddpx.study.choice.{name}": str(c.get("chosen")) for name, c in new.items()})
    parent.log_metrics(
        {
            f"choice.{name}.mean_dev": c["evidence"][c["chosen"]]["mean_dev"]
            for name, c in new.items()
            if c.get("chosen")
        }
    )
    parent.log_artifact(study.folder.path / "choice.json", "study")
    study.folder.event("choice recorded on the parent run", run_id=parent.run_id, sets=sorted(new))
    return recorded, sorted(new)


def set_choice(study_set: StudySet, records: list[RunRecord], seeds: tuple[int, ...]) -> dict[str, Any]:
    """One set's choice by the rule, on dev alone, among its candidates but its baseline; a set with a
    baseline names it beside the choice."""
    in_set = [r for r in records if r.set == study_set.name]
    choice = choose(in_set, study_set.contenders, seeds) if in_set else {"chosen": None, "reason": "no run finished"}
    return {**choice, "baseline": study_set.baseline} if study_set.baseline else choice
