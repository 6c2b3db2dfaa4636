"""How ``ddpx study`` shows its progress (dev values only), its choice, and its table."""

from __future__ import annotations

import json
import math
import statistics
import time
from collections import Counter, defaultdict
from datetime import timedelta
from pathlib import Path

import click

from ddpx.contract.errors import UserError
from ddpx.records.study_recipes import CHANGED, RECIPES


class RunProgress:
    """What ``ddpx study run`` prints as each run ends: :func:`print_run`'s line with how far the
    command has come (the runs ended of those it has to run, the time since it began) and, while the
    run's set has runs left, how long they may take at that set's pace so far (its ended runs' mean
    wall time; ``at_once`` runs side by side). Sets differ in size, so a set's pace is its own."""

    def __init__(self, trials: list, at_once: int = 1):
        self.to_run, self.ended, self.began = len(trials), 0, time.monotonic()
        self.left = Counter(trial.set_name for trial in trials)
        self.walls: dict[str, list[float]] = defaultdict(list)
        self.at_once = max(1, at_once)

    def __call__(self, trial) -> None:
        self.ended += 1
        self.left[trial.set_name] -= 1
        if trial.summary is not None:
            self.walls[trial.set_name].append(trial.summary.wall_seconds)
        since = timedelta(seconds=round(time.monotonic() - self.began))
        print_run(trial, f"{self.ended} of {self.to_run} ended, {since} since the start{self._pace(trial.set_name)}")

    def _pace(self, name: str) -> str:
        left, walls = self.left[name], self.walls[name]
        if left <= 0 or not walls:
            return ""
        more = timedelta(seconds=round(statistics.mean(walls) * math.ceil(left / self.at_once)))
        return f"; {name}: {left} more, about {more} at its pace so far"


def print_run(trial, progress: str = "") -> None:
    """One line as a run ends: its dev value, never its held-out one (the choice is not made yet)."""
    from ddpx.cli.sweep_report import dev_text

    if trial.status == "FINISHED" and trial.summary is not None:
        members = trial.summary.members
        detail = f"{dev_text(trial)} ({f'{len(members)} members' if members else f'epoch {trial.summary.best_epoch}'})"
    else:
        detail = f"FAILED: {(trial.error or 'no error recorded').strip().splitlines()[0]}"
    click.echo(f"ddpx: run {trial.number} ({trial.label}): {detail}{f' [{progress}]' if progress else ''}")


def print_choice(recorded, sets: list[str] | None = None) -> None:
    """The choice of ``sets`` (default: every set chosen so far), dev values only."""
    for name, choice in recorded.choice.items():
        if sets is not None and name not in sets:
            continue
        chosen = choice.get("chosen")
        if not chosen:
            click.echo(f"ddpx: set {name}: no candidate chosen ({choice.get('reason', '')})")
            continue
        means = ", ".join(
            f"{candidate} {values['mean_dev']:.4f}" + ("" if values["complete"] else " (seeds missing)")
            for candidate, values in choice["evidence"].items()
            if values["mean_dev"] is not None
        )
        beside = f"; its baseline {choice['baseline']} is never chosen" if choice.get("baseline") else ""
        click.echo(f"ddpx: set {name}: chose {chosen} by mean dev_{choice['metric']} ({means}){beside}")
    click.echo(f"ddpx: the choice is recorded in {recorded.study.path / 'choice.json'} and on the parent run")


def print_set_chosen(study_file: Path, recorded, sets: list[str]) -> None:
    """A set's choice, made while the study goes on: its table is ready before the rest of the study."""
    print_choice(recorded, sets)
    click.echo(f"ddpx: its table, while the study goes on: ddpx study report {study_file}")


def print_kept(study) -> None:
    """The sets kept from an earlier export, and the code their runs were made with."""
    for name, entry in study.kept.items():
        origin = entry.get("kept_from", {})
        code = (origin.get("code.commit") or origin.get("code.code_digest", ""))[:12]
        changed = entry.get(CHANGED, [])
        click.echo(
            f"ddpx: set {name}: kept from {origin.get('records', 'an earlier export')} (chose {entry['chosen']}; "
            f"its {len(entry.get('runs', []))} runs made by code {code}), not run again"
            + ("; its recipes resolve otherwise now:" if changed else "")
        )
        for change in changed:
            click.echo(f"    {change}")


def print_table(study, recorded) -> None:
    from ddpx.records.study_report import export_records, markdown

    records = export_records(study.spec, recorded, study.records(), study.folder.info(), study.kept, study.recipes)
    click.echo("")
    click.echo(markdown(records), nl=False)


def study_folder(spec, runs_dir: str | None):
    """The folder of this study file's latest run that made its choice."""
    from ddpx.contract.run_dir import DEFAULT_ROOT
    from ddpx.records.study_records import StudyDir

    root = Path(runs_dir or DEFAULT_ROOT).resolve() / "studies"
    found = sorted(
        (p for p in root.glob(f"{spec.name}-{spec.digest[:10]}-*") if _has_choice(p)),
        key=lambda p: p.stat().st_mtime,
    )
    if not found:
        raise UserError(
            f"study '{spec.name}' ({spec.path}) has chosen no set yet under {root}: a set is chosen once every "
            f"run of it has finished; run `ddpx study run {spec.path}` until one has (or give --run-dir where "
            "its runs are)."
        )
    return StudyDir.at(found[-1])


def _has_choice(folder: Path) -> bool:
    """A study folder with a set chosen: by its own runs, or kept from an earlier export."""
    return (folder / "choice.json").is_file() or (folder / "kept.json").is_file()


def exported(source: Path, runs_dir: str | None) -> dict:
    """A study file's records, held-out values read through its recorded choice."""
    from ddpx.config.study_file import read_study
    from ddpx.records.study_records import RecordedChoice, RunRecord
    from ddpx.records.study_report import export_records

    spec = read_study(source)
    folder = study_folder(spec, runs_dir)
    lines = (folder.path / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    records = [RunRecord(**json.loads(line)) for line in lines if line.strip()]
    info = folder.info()
    recorded = RecordedChoice.read(folder) if (folder.path / "choice.json").is_file() else RecordedChoice(folder, {})
    return export_records(spec, recorded, records, info, kept_now(spec, folder.kept_sets()), folder.recipes())


def kept_now(spec, kept: dict) -> dict:
    """The kept sets, each with the settings its candidates resolve to otherwise now, where it records them."""
    if not any(RECIPES in entry for entry in kept.values()):
        return kept
    from ddpx.cli.app import registry_with_warnings
    from ddpx.launch.kept_recipes import with_changes

    registry = registry_with_warnings()
    return {name: with_changes(registry, spec, name, entry) for name, entry in kept.items()}
