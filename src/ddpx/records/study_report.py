"""A study's table: its records exported to one JSON file, and the Markdown table made from them.

:func:`export_records` reads held-out values through the recorded choice only; :func:`markdown`
needs nothing but the exported records, so a table in the docs regenerates byte for byte from a
file committed beside it (``ddpx study report RECORDS.json``).

Per set: the chosen candidate, its held-out mean ± sd over seeds, and for each published row the
difference (held-out − published) with a 95 % t-interval over the seeds: "past" where the whole
interval is on the better side, "short" where it is on the worse, "level" where it holds zero.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from ddpx.records.study_records import RecordedChoice, RunRecord

FORMAT = 1


def export_records(spec: Any, recorded: RecordedChoice, records: list[RunRecord], info: dict[str, Any]) -> dict:
    """Everything the table needs, held-out values included (read through the recorded choice)."""
    sets = []
    for study_set in spec.sets:
        in_set = [r for r in records if r.set == study_set.name]
        runs = [
            {"candidate": r.candidate, "seed": r.seed, "dev": r.dev, "heldout": recorded.heldout(r)} for r in in_set
        ]
        choice = recorded.choice.get(study_set.name, {})
        sets.append(
            {
                "name": study_set.name,
                "metric": in_set[0].metric if in_set else "",
                "greater_is_better": in_set[0].greater_is_better if in_set else True,
                "candidates": [c.name for c in study_set.candidates],
                "chosen": choice.get("chosen"),
                "evidence": choice.get("evidence", {}),
                "published": study_set.published,
                "runs": runs,
            }
        )
    study = {k: info[k] for k in sorted(info) if k.startswith(("study.", "code.", "library."))}
    return {"format": FORMAT, "study": study, "sets": sets}


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


def _set_rows(entry: dict) -> list[str]:
    metric, chosen = entry["metric"], entry["chosen"]
    if not chosen:
        return [f"| {entry['name']} | {metric} | none chosen | | | | |"]
    runs = sorted((r for r in entry["runs"] if r["candidate"] == chosen), key=lambda r: r["seed"])
    values = [r["heldout"][f"heldout_{metric}"] for r in runs]
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    dev = entry["evidence"][chosen]["mean_dev"]
    heldout = f"{statistics.fmean(values):.4f} ± {sd:.4f} ({len(values)})"
    first = f"| {entry['name']} | {metric} | {chosen} | {dev:.4f} | {heldout} |"
    if not entry["published"]:
        return [f"{first} | |"]
    rows = []
    for number, (label, published) in enumerate(sorted(entry["published"].items())):
        mean, low, high = t_interval([v - published for v in values])
        compared = f"{label} {published:.3f}: {mean:+.4f} [{low:+.4f}, {high:+.4f}]"
        said = verdict(low, high, entry["greater_is_better"])
        rows.append(f"{first if number == 0 else '| | | | | |'} {compared} | {said} |")
    return rows


def markdown(records: dict) -> str:
    """The study's table, from its exported records alone."""
    study = records["study"]
    lines = [
        f"Study `{study.get('study.name', '')}` (file sha256 {study.get('study.digest', '')[:12]}, "
        f"code {study.get('code.commit', study.get('code.code_digest', ''))[:12]}), "
        f"seeds {study.get('study.seeds', '')}, chosen by {study.get('study.rule', '')} on dev.",
        "",
        "| set | metric | chosen | dev (mean) | held-out mean ± sd (seeds) | against published: "
        "difference [95 % interval] | |",
        "| --- | --- | --- | ---: | ---: | --- | --- |",
    ]
    for entry in records["sets"]:
        lines += _set_rows(entry)
    return "\n".join(lines) + "\n"
