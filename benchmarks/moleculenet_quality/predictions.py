"""A run's held-out predictions (``reports/heldout_predictions.csv``): read, scored as ddpx scores
them, averaged over seeds into an ensemble, and kept beside a ``--record`` file."""

from __future__ import annotations

import csv
import math
import sys
from pathlib import Path


def heldout_predictions(path: Path) -> dict[str, list[float]] | None:
    """The run's numeric ``heldout_predictions.csv`` columns (an empty cell, a missing label, is NaN;
    a column of text, such as a conformal prediction set ``0|1``, is left out)."""
    if not path.is_file():
        return None
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        return None
    columns = {name: numbers([r[name] for r in rows]) for name in rows[0]}
    return with_exact_probabilities({name: values for name, values in columns.items() if values is not None})


def numbers(cells: list[str]) -> list[float] | None:
    """The column's cells as numbers (an empty one NaN), or None for a column of text."""
    try:
        return [float(cell) if cell != "" else math.nan for cell in cells]
    except ValueError:
        return None


def with_exact_probabilities(columns: dict[str, list[float]]) -> dict[str, list[float]]:
    """Where a file has the logits, its probabilities computed from them in float64: files written
    before 2026-11-26 hold float32 probabilities, 1.0 from a logit of about 17 on (ties the model
    does not make)."""
    from ddpx.records.label_reports import probabilities_of

    for name in [n for n in columns if of_kind(n, "logit")]:
        probability = "probability" + name[len("logit") :]
        if probability in columns:
            columns[probability] = probabilities_of(columns[name]).tolist()
    return columns


def of_kind(name: str, kind: str) -> bool:
    """Whether a predictions column holds ``kind`` (``probability``, or ``probability_<label>``)."""
    return name == kind or name.startswith(kind + "_")


def score_pairs(
    columns: dict[str, list[float]], kinds: tuple[str, ...] = ("probability", "prediction")
) -> list[tuple[str, str]]:
    """``(target column, score column)`` per label: ``target_X`` beside ``probability_X`` or ``prediction_X``
    (the first of ``kinds`` a label has)."""
    pairs: dict[str, str] = {}
    for kind in kinds:
        for name in columns:
            if of_kind(name, kind):
                pairs.setdefault("target" + name[len(kind) :], name)
    return [(target, pairs[target]) for target in sorted(pairs, key=list(columns).index)]


def metric_of(columns: dict[str, list[float]], metric: str) -> float | None:
    """The held-out metric from prediction columns, as ddpx computes it: ROC-AUC per label over the
    molecules that have it (ddpx's own ``label_scores``: labels with one class left out; on the
    logits where the file has them, the scores the run ranked), RMSE per target; the mean over
    labels."""
    import numpy as np

    from ddpx.records.label_reports import label_scores

    pairs = score_pairs(columns, ("logit", "probability", "prediction"))
    targets = np.array([columns[t] for t, _ in pairs]).T
    scores = np.array([columns[s] for _, s in pairs]).T
    if metric == "roc_auc":
        values = [v for _, _, v in label_scores(targets, scores, [s for _, s in pairs])]
    elif metric == "rmse":
        present = ~np.isnan(targets)
        values = [
            float(np.sqrt(np.mean((scores[present[:, j], j] - targets[present[:, j], j]) ** 2)))
            for j in range(len(pairs))
        ]
    else:
        return None
    return float(np.mean(values)) if values else None


def ensemble_value(rows: list[dict]) -> float | None:
    """The held-out metric of the seeds' models as one ensemble: each molecule's probabilities (or
    predicted values) averaged over the seeds, as Chemprop's ``--ensemble-size`` averages its models.
    Each seed's own value is first recomputed from its predictions file and must match the run's."""
    if len(rows) < 2:
        return None
    averaged = seeds_averaged(rows)
    return None if averaged is None else metric_of(averaged, rows[0]["metric"])


def seeds_averaged(rows: list[dict]) -> dict[str, list[float]] | None:
    """The seeds' predictions averaged molecule by molecule, or None where a seed has none or its
    file does not give its run's own value."""
    tables = [r.get("predictions") for r in rows]
    if any(t is None for t in tables):
        return None
    for r, t in zip(rows, tables):
        again = metric_of(t, r["metric"])
        if again is None or abs(again - r["value"]) > 1e-4:
            print(
                f"ensemble left out: seed {r['seed']}'s predictions file gives {again}, its run {r['value']}",
                file=sys.stderr,
            )
            return None
    return averaged(tables)


def averaged(tables: list[dict[str, list[float]]]) -> dict[str, list[float]] | None:
    """Each score column averaged over ``tables``; None unless every table has the same molecules
    (the same targets, in the same order)."""
    import numpy as np

    pairs = score_pairs(tables[0])
    targets = [np.asarray(tables[0][t]) for t, _ in pairs]
    for table in tables[1:]:
        if score_pairs(table) != pairs or not all(
            np.array_equal(np.asarray(table[t]), first, equal_nan=True) for (t, _), first in zip(pairs, targets)
        ):
            print("ensemble left out: the predictions are not of the same held-out molecules", file=sys.stderr)
            return None
    result = {name: column for name, column in tables[0].items() if not of_kind(name, "logit")}
    for _, score_name in pairs:
        result[score_name] = list(np.mean([t[score_name] for t in tables], axis=0))
    return result


def write_predictions(columns: dict[str, list[float]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(list(columns))
        writer.writerows(zip(*(["" if math.isnan(v) else repr(v) for v in c] for c in columns.values())))
    return path
