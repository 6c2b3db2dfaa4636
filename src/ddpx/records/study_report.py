"""A study's table: its records exported to one JSON file, and the Markdown table made from them.

:func:`export_records` reads held-out values through the recorded choice only; :func:`markdown`
needs nothing but the exported records, so a table in the docs regenerates byte for byte from a
file committed beside it (``ddpx study report RECORDS.json``).

Per set: the chosen candidate (a set not chosen yet, while the study goes on: how many of its runs
have finished, and nothing else), its held-out mean ± sd over seeds, and for each published row the
difference (held-out − published) with a 95 % t-interval over the seeds: "past" where the whole
interval is on the better side, "short" where it is on the worse, "level" where it holds zero.
Beside them, as outcomes of their own, the ensembles the set declares
(:mod:`ddpx.records.study_ensembles`): its seeds together, and the families together (mean ± sd
over the seeds); where one has no value, "—" and a numbered note under the table says why.
A set with a baseline (a candidate never chosen) adds its held-out mean ± sd and the chosen
candidate's paired difference against it (chosen − baseline, seed by seed, over the seeds both
have) with the same interval and words; a study without a baseline has neither those columns
nor a ``baseline`` key in its records. Under the table, for the baseline and each published row,
the sets where the chosen candidate is past, level and short (the rows' own words, counted). A set
kept from an earlier export (``--from-records``) is that export's entry, with ``kept_from`` naming
it and the code its runs were made with; a note under the table names that code where it differs.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from ddpx.records.study_ensembles import set_ensembles
from ddpx.records.study_recipes import CHANGED, RECIPES
from ddpx.records.study_records import RecordedChoice, RunRecord, data_digest

FORMAT = 2  # 2: each set's ensembles (and a set's "baseline", only where it has one)
ENSEMBLE_COLUMNS = {"seeds": "its seeds together", "families": "families together, mean ± sd (seeds)"}
DATA_SHA256 = "data_sha256"  # the set's data file (or folder) when exported, which --from-records checks
KEPT_FROM = "kept_from"  # a set kept from an earlier export: that export, and the code its runs were made with
BASELINE_COLUMNS = (
    " baseline | baseline held-out mean ± sd (seeds) | chosen − baseline, seed by seed: difference [95 % interval]"
    " (seeds) | |"
)


def export_records(
    spec: Any,
    recorded: RecordedChoice,
    records: list[RunRecord],
    info: dict[str, Any],
    kept: dict | None = None,
    recipes: dict | None = None,
) -> dict:
    """Everything the table needs, held-out values included (read through the recorded choice); a set
    ``kept`` from an earlier export as it holds it; each set's candidates' settings as ``recipes`` holds them."""
    kept, recipes = kept or {}, recipes or {}
    sets = [
        kept[study_set.name]
        if study_set.name in kept
        else _set_records(
            spec, study_set, recorded, [r for r in records if r.set == study_set.name], recipes.get(study_set.name)
        )
        if study_set.name in recorded.choice
        else _pending_set(spec, study_set, [r for r in records if r.set == study_set.name])
        for study_set in spec.sets
    ]
    study = {k: info[k] for k in sorted(info) if k.startswith(("study.", "code.", "library."))}
    if "study.file" in study:
        study["study.file"] = in_repository(Path(study["study.file"]))
    return {"format": FORMAT, "study": study, "sets": sets}


def in_repository(path: Path) -> str:
    """The study file's path inside the git work tree that holds it, else its name: the export is
    committed, and the folders of the machine the study ran on are not the reader's."""
    for folder in path.parents:
        if (folder / ".git").exists():
            return path.relative_to(folder).as_posix()
    return path.name


def _set_records(
    spec: Any, study_set: Any, recorded: RecordedChoice, in_set: list[RunRecord], recipes: dict | None = None
) -> dict:
    """One set's records: every run's dev and held-out values, the choice, the ensembles, the settings."""
    heldout = {(r.candidate, r.seed): recorded.heldout(r) for r in in_set}
    metric = in_set[0].metric if in_set else ""
    choice = recorded.choice.get(study_set.name, {})
    values = {run: found.get(f"heldout_{metric}") for run, found in heldout.items()}
    chosen = choice.get("chosen")
    ensembles = set_ensembles(recorded, study_set.ensembles, in_set, values, chosen, spec.seeds) if in_set else {}
    return {
        "name": study_set.name,
        "metric": metric,
        "greater_is_better": in_set[0].greater_is_better if in_set else True,
        "candidates": [c.name for c in study_set.candidates],
        "chosen": chosen,
        "evidence": choice.get("evidence", {}),
        "published": study_set.published,
        **({DATA_SHA256: digest} if (digest := data_digest(study_set.data)) else {}),
        "ensembles": ensembles,
        **({"baseline": choice["baseline"]} if choice.get("baseline") else {}),
        **({RECIPES: recipes} if recipes else {}),
        "runs": [
            {"candidate": r.candidate, "seed": r.seed, "dev": r.dev, "heldout": heldout[r.candidate, r.seed]}
            for r in in_set
        ],
    }


def _pending_set(spec: Any, study_set: Any, in_set: list[RunRecord]) -> dict:
    """A set not chosen yet: how many of its runs have finished, and no value of any of them."""
    declared = len(study_set.candidates) * len(spec.seeds)
    return {
        "name": study_set.name,
        "metric": in_set[0].metric if in_set else "",
        "candidates": [c.name for c in study_set.candidates],
        "chosen": None,
        "pending": f"not chosen yet: {len(in_set)} of its {declared} runs finished",
        "published": study_set.published,
        "runs": [],
    }


def write_records(records: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_records(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def t_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and the 95 % t-interval of ``values`` (the interval is the mean alone for one value)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    from scipy.stats import t

    half = t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def verdict(low: float, high: float, greater_is_better: bool) -> str:
    if low > 0:
        return "past" if greater_is_better else "short"
    if high < 0:
        return "short" if greater_is_better else "past"
    return "level"


Standing = dict[str, dict[str, list[str]]]  # against what -> past / level / short -> the sets


def _set_rows(entry: dict, ensembles: list[str], baselines: bool, notes: list[str], standing: Standing) -> list[str]:
    metric, chosen = entry["metric"], entry["chosen"]
    beside = _ensemble_cells(entry, ensembles, notes) + (_baseline_cells(entry, notes, standing) if baselines else [])
    together = "".join(f" {cell} |" for cell in beside)
    if not chosen:
        return [f"| {entry['name']} | {metric} | {entry.get('pending', 'none chosen')} | | |{together} | |"]
    values = list(_heldout_by_seed(entry, chosen).values())
    dev = entry["evidence"][chosen]["mean_dev"]
    first = f"| {entry['name']} | {metric} | {chosen} | {dev:.4f} | {_mean_sd(values)} |{together}"
    if not entry["published"]:
        return [f"{first} | |"]
    rows = []
    for number, (label, published) in enumerate(sorted(entry["published"].items())):
        mean, low, high = t_interval([v - published for v in values])
        compared = f"{label} {published:.3f}: {mean:+.4f} [{low:+.4f}, {high:+.4f}]"
        said = verdict(low, high, entry["greater_is_better"])
        _stands(standing, label, entry["name"], said)
        rows.append(f"{first if number == 0 else '| |' + ' |' * (4 + len(beside))} {compared} | {said} |")
    return rows


def _stands(standing: Standing, against: str, set_name: str, said: str) -> None:
    standing.setdefault(against, {"past": [], "level": [], "short": []})[said].append(set_name)


def standing_lines(standing: Standing, chosen: int, sets: int) -> list[str]:
    """Where the chosen candidates stand, counted from the rows' words: a line for the baseline and
    for each published row (``past on 2 (bbbp, bace), level on 1 (clintox), short on none``)."""
    if not standing:
        return []
    lines = [f"Where the chosen candidates stand (sets chosen: {chosen} of {sets}):"]
    for against, said in standing.items():
        counted = [
            f"{word} on {len(names)} ({', '.join(names)})" if names else f"{word} on none"
            for word, names in said.items()
        ]
        lines.append(f"- against {against}: {', '.join(counted)}")
    return ["", *lines]


def _baseline_cells(entry: dict, notes: list[str], standing: Standing) -> list[str]:
    """The baseline's name and held-out mean ± sd, and the chosen candidate's difference against it
    seed by seed (chosen − baseline, over the seeds both have) with its 95 % interval and what it
    says; empty where the set has no baseline, "—" with a numbered note where it has no value."""
    baseline = entry.get("baseline")
    if not baseline:
        return ["", "", "", ""]
    own = _heldout_by_seed(entry, baseline)
    if not own:
        notes.append(f"{entry['name']}, baseline {baseline}: no run of it has a held-out {entry['metric']}.")
        return [baseline, f"— (note {len(notes)})", "", ""]
    cells = [baseline, _mean_sd(list(own.values()))]
    chosen = _heldout_by_seed(entry, entry["chosen"]) if entry["chosen"] else {}
    differences = [chosen[seed] - value for seed, value in own.items() if seed in chosen]
    if not differences and entry["chosen"]:
        notes.append(
            f"{entry['name']}: {entry['chosen']} and its baseline {baseline} have no seed's held-out value in common."
        )
        return [*cells, f"— (note {len(notes)})", ""]
    if not differences:
        return [*cells, "", ""]
    mean, low, high = t_interval(differences)
    compared = f"{mean:+.4f} [{low:+.4f}, {high:+.4f}] ({len(differences)})"
    said = verdict(low, high, entry["greater_is_better"])
    _stands(standing, "its baseline", entry["name"], said)
    return [*cells, compared, said]


def _heldout_by_seed(entry: dict, candidate: str) -> dict[int, float]:
    """A candidate's held-out values of the set's metric by seed, in the order of the seeds."""
    key = f"heldout_{entry['metric']}"
    runs = sorted((r for r in entry["runs"] if r["candidate"] == candidate), key=lambda r: r["seed"])
    return {r["seed"]: r["heldout"][key] for r in runs if r["heldout"].get(key) is not None}


def _mean_sd(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.4f} ± {sd:.4f} ({len(values)})"


def _ensemble_cells(entry: dict, ensembles: list[str], notes: list[str]) -> list[str]:
    """A cell per ensemble column: its value; empty where the set declares none; "—" with a
    numbered note saying why where it has none."""
    cells = []
    for name in ensembles:
        outcome = entry.get("ensembles", {}).get(name)
        if outcome is None:
            cells.append("")
        elif outcome["reason"]:
            notes.append(f"{entry['name']}, {ENSEMBLE_COLUMNS[name]}: {outcome['reason']}.")
            cells.append(f"— (note {len(notes)})")
        else:
            value = outcome.get("value")
            cells.append(f"{value:.4f}" if name == "seeds" else _mean_sd(outcome["values"]))
    return cells


def _ensembles_reported(records: dict) -> list[str]:
    """The ensemble columns of the table: those any set declares, in a fixed order."""
    found = {name for entry in records["sets"] for name in entry.get("ensembles", {})}
    return [name for name in ENSEMBLE_COLUMNS if name in found]


def markdown(records: dict) -> str:
    """The study's table, from its exported records alone."""
    study, ensembles, notes, standing = records["study"], _ensembles_reported(records), [], {}
    baselines = any(entry.get("baseline") for entry in records["sets"])
    rows = [row for entry in records["sets"] for row in _set_rows(entry, ensembles, baselines, notes, standing)]
    notes += [note for entry in records["sets"] if (note := kept_code_note(entry, study))]
    chosen = sum(1 for entry in records["sets"] if entry["chosen"])
    lines = [
        f"Study `{study.get('study.name', '')}` (file sha256 {study.get('study.digest', '')[:12]}, "
        f"code {study.get('code.commit', study.get('code.code_digest', ''))[:12]}), "
        f"seeds {study.get('study.seeds', '')}, chosen by {study.get('study.rule', '')} on dev.",
        "",
        "| set | metric | chosen | dev (mean) | held-out mean ± sd (seeds) |"
        + "".join(f" {ENSEMBLE_COLUMNS[name]} |" for name in ensembles)
        + (BASELINE_COLUMNS if baselines else "")
        + " against published: difference [95 % interval] | |",
        "| --- | --- | --- | ---: | ---: |"
        + " ---: |" * len(ensembles)
        + (" --- | ---: | --- | --- |" if baselines else "")
        + " --- | --- |",
        *rows,
        *standing_lines(standing, chosen, len(records["sets"])),
    ]
    if notes:
        lines += ["", *(f"{number}. {note}" for number, note in enumerate(notes, 1))]
    return "\n".join(lines) + "\n"


def kept_code_note(entry: dict[str, Any], study: dict[str, Any]) -> str | None:
    """The table's note for a kept set whose runs were made by other code than the export's own, or
    whose candidates' settings resolve otherwise with the export's code (:data:`CHANGED`)."""
    origin = entry.get(KEPT_FROM)
    if not origin:
        return None
    said = []
    if origin.get("code.code_digest") != study.get("code.code_digest"):
        said.append(f"its runs made by code {(origin.get('code.commit') or origin.get('code.code_digest', ''))[:12]}")
    if entry.get(CHANGED):
        said.append(f"its recipes resolve otherwise with this code ({'; '.join(entry[CHANGED])})")
    return (
        f"{entry['name']}: kept from {origin.get('records', 'an earlier export')}, {', '.join(said)}." if said else None
    )
