"""A run's held-out predictions (``reports/heldout_predictions.csv``): read, scored as ddpx scores
them, averaged over seeds into an ensemble, and kept beside a ``--record`` file.

The reading, scoring and averaging are ddpx's own (:mod:`ddpx.records.heldout_answers`,
:mod:`ddpx.records.seed_ensemble`, as ``ddpx study`` reports its seeds together); this module
holds the benchmark's rows (``seed``, ``metric``, ``value``, ``predictions``: the file's numeric
columns) and prints why an ensemble is left out.
"""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

from ddpx.records.heldout_answers import HeldoutAnswers, NoValue, answers_of, read_columns, score
from ddpx.records.seed_ensemble import Member, average, checked, together


def heldout_predictions(path: Path) -> dict[str, list[float]] | None:
    """The run's numeric ``heldout_predictions.csv`` columns (an empty cell, a missing label, is NaN;
    a column of text, such as a conformal prediction set ``0|1``, is left out); None without one."""
    try:
        return read_columns(path)
    except NoValue:
        return None


def metric_of(columns: dict[str, list[float]], metric: str) -> float | None:
    """The held-out metric from prediction columns, as ddpx computes it (ROC-AUC per label over the
    molecules that have it, on the logits where the file has them; RMSE per target; the mean over
    labels)."""
    try:
        return score(answers_of(columns), metric)
    except NoValue:
        return None


def answers_metric(answers: HeldoutAnswers, metric: str) -> float | None:
    """The held-out metric of answers (averaged ones, say); None where it cannot be computed."""
    try:
        return score(answers, metric)
    except NoValue as exc:
        print(f"ensemble left out: {exc}", file=sys.stderr)
        return None


def ensemble_value(rows: list[dict]) -> float | None:
    """The held-out metric of the seeds' models as one ensemble: each molecule's probabilities (or
    predicted values) averaged over the seeds, as Chemprop's ``--ensemble-size`` averages its models.
    Each seed's own value is first recomputed from its predictions file and must match the run's."""
    if len(rows) < 2:
        return None
    try:
        return together([_member(r) for r in rows], rows[0]["metric"])
    except NoValue as exc:
        print(f"ensemble left out: {exc}", file=sys.stderr)
        return None


def seeds_averaged(rows: list[dict]) -> HeldoutAnswers | None:
    """The seeds' answers averaged molecule by molecule, or None where a seed has none or its file
    does not give its run's own value."""
    try:
        return average([checked(_member(r), r["metric"]) for r in rows])
    except NoValue as exc:
        print(f"ensemble left out: {exc}", file=sys.stderr)
        return None


def averaged(tables: list[HeldoutAnswers]) -> HeldoutAnswers | None:
    """Answers averaged over ``tables`` (equal weight each); None unless they are of the same molecules."""
    try:
        return average(tables)
    except NoValue as exc:
        print(f"ensemble left out: {exc}", file=sys.stderr)
        return None


def _member(row: dict) -> Member:
    if row.get("predictions") is None:
        raise NoValue(f"seed {row['seed']} kept no predictions file")
    return Member(f"seed {row['seed']}", answers_of(row["predictions"]), row["value"])


def write_predictions(columns: dict[str, list[float]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(list(columns))
        writer.writerows(zip(*(["" if math.isnan(v) else repr(v) for v in c] for c in columns.values())))
    return path
