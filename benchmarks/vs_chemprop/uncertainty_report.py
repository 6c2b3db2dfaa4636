"""The table ``uncertainty.py`` prints, from its record alone (``--report FILE.json`` prints it
again): one table per set, a row per method and program, each metric's mean ± sd over the seeds
with every seed's value, then a line per goal, met or not, and how far held-out conformal coverage
falls from the nominal 90 %."""

from __future__ import annotations

import statistics

PROGRAMS = {"chemprop": "Chemprop 2.3.1", "ddpx": "ddpx"}
COLUMNS = {  # regression: metric, heading
    True: {
        "rmse": "RMSE",
        "nll": "NLL",
        "miscalibration_area": "miscalibration area",
        "ence": "ENCE",
        "spearman": "Spearman (uncertainty, abs. error)",
        "coverage": "coverage, 90 %",
        "width": "mean width, 90 %",
    },
    False: {
        "roc_auc": "ROC-AUC",
        "nll": "NLL",
        "ece": "ECE (10 bins)",
        "coverage": "coverage, 90 %",
        "set_size": "mean set size, 90 %",
    },
}
WHAT = {  # (regression, method, program): what the row measured ({k}: the ensemble's size)
    (True, "mve", "chemprop"): "`-t regression-mve`; `--uncertainty-method mve`, `zscaling` fitted on dev",
    (True, "mve", "ddpx"): "`model.uncertainty=mve train.calibration=zscaling`",
    (True, "ensemble", "chemprop"): "`--ensemble-size {k}`; `--uncertainty-method ensemble` (members' variance)",
    (True, "ensemble", "ddpx"): "`train.ensemble_size={k}` (members' spread, squared)",
    (True, "ensemble_zscaling", "chemprop"): "the ensemble row's model; `zscaling` fitted on dev",
    (True, "ensemble_zscaling", "ddpx"): "`train.ensemble_size={k} train.calibration=zscaling`: `calibrated_variance`",
    (True, "conformal", "chemprop"): "the mve model; `conformal-regression`, alpha 0.1, on dev: ŷ ± (σ² + q)",
    (True, "conformal", "ddpx"): "the mve run's recorded 90 % interval, fitted on dev: ŷ ± q σ",
    (False, "platt", "chemprop"): "`-t classification`; `platt` fitted on dev",
    (False, "platt", "ddpx"): "`train.calibration=platt`",
    (False, "isotonic", "chemprop"): "the platt row's model; `isotonic` fitted on dev",
    (False, "isotonic", "ddpx"): "`train.calibration=isotonic` (its own run)",
    (False, "conformal", "chemprop"): "the platt row's model; `conformal-multilabel`, alpha 0.1, on dev",
    (False, "conformal", "ddpx"): "the platt run's recorded 90 % set, fitted on dev",
    (False, "ensemble", "chemprop"): "`--ensemble-size {k}`; the members' mean probability",
    (False, "ensemble", "ddpx"): "`train.ensemble_size={k}`; the members' mean probability",
    (False, "ensemble_platt", "chemprop"): "the ensemble row's models; `platt` fitted on dev on their mean",
    (False, "ensemble_platt", "ddpx"): "`train.ensemble_size={k} train.calibration=platt`: `calibrated_probability`",
}
CALIBRATED = ("platt", "isotonic", "ensemble_platt")  # the classification rows of a calibrated model
NOMINAL, WITHIN = 0.9, 0.02


def values(runs: list[dict], metric: str) -> list[float]:
    return [run[metric] for run in runs if metric in run]


def cell(runs: list[dict], metric: str) -> str:
    """``mean ± sd (seed, seed, ...)``; ``—`` where the metric is not measured, ``n/a`` where the
    program's method failed (the reason is below the table)."""
    if any("unavailable" in run for run in runs):
        return "n/a"
    found = values(runs, metric)
    if not found:
        return "—"
    if len(found) == 1:
        return f"{found[0]:.4f}"
    each = ", ".join(f"{v:.4f}" for v in found)
    return f"{statistics.mean(found):.4f} ± {statistics.stdev(found):.4f} ({each})"


def header(record: dict) -> str:
    seeds = " ".join(map(str, record["seeds"]))
    return (
        f"{record['measured']}; {record['set']} ({record['data']}), MoleculeNet's scaffold split 80/10/10 as ddpx "
        f"makes it ({record['dev']} dev, {record['heldout']} held-out molecules), {record['epochs']} epochs, "
        f"ensembles of {record['ensemble_size']}, seeds {seeds}; both keep the epoch of lowest dev loss"
    )


def table(record: dict) -> list[str]:
    regression, columns = record["regression"], COLUMNS[record["regression"]]
    lines = [
        f"| method | program | what | {' | '.join(columns.values())} |",
        "| --- | --- | --- |" + " --- |" * len(columns),
    ]
    for method in record["methods"]:
        for program, label in PROGRAMS.items():
            runs = record["scores"][method][program]
            what = WHAT[(regression, method, program)].format(k=record["ensemble_size"])
            cells = " | ".join(cell(runs, metric) for metric in columns)
            lines.append(f"| {method} | {label} | {what} | {cells} |")
    return lines


def every_row(record: dict):
    """``(method, program's label, row)`` for every row of the record, in the table's order."""
    for method in record["methods"]:
        for program, label in PROGRAMS.items():
            for run in record["scores"][method][program]:
                yield method, label, run


def failures(record: dict) -> list[str]:
    return [
        f"n/a, {method}, {label}, seed {run['seed']}: {run['unavailable']}"
        for method, label, run in every_row(record)
        if "unavailable" in run
    ]


def mean_of(record: dict, method: str, program: str, metric: str) -> float | None:
    runs = record["scores"].get(method, {}).get(program, [])
    found = values(runs, metric)
    return statistics.mean(found) if found and len(found) == len(runs) else None


def best(record: dict, methods: tuple[str, ...], program: str, metric: str, lower: bool) -> tuple[str, float] | None:
    """The method with the best mean of ``metric`` among ``methods`` for ``program``."""
    means = [(m, v) for m in methods if (v := mean_of(record, m, program, metric)) is not None]
    if not means:
        return None
    return (min if lower else max)(means, key=lambda pair: pair[1])


def coverage_line(record: dict) -> str:
    kind = "interval" if record["regression"] else "set"
    parts = []
    for program, label in PROGRAMS.items():
        runs = record["scores"].get("conformal", {}).get(program, [])
        value = mean_of(record, "conformal", program, "coverage")
        if value is None:
            parts.append(f"{label} {'n/a' if any('unavailable' in run for run in runs) else 'not measured'}")
            continue
        points = (NOMINAL - value) * 100
        parts.append(f"{label} {value:.4f} ({abs(points):.1f} points {'below' if points > 0 else 'above'} 90 %)")
    ours = mean_of(record, "conformal", "ddpx", "coverage")
    verdict = "not measured" if ours is None else "met" if abs(ours - NOMINAL) <= WITHIN else "not met"
    return (
        f"- Held-out coverage of the 90 % conformal {kind}, fitted on dev (the scaffold split's held-out "
        f"molecules are not exchangeable with the dev ones, which the 90 % guarantee assumes): "
        f"{'; '.join(parts)}. Goal, ddpx within 2 points of 90 %: **{verdict}**."
    )


def versus_line(record: dict, name: str, metric: str, methods: tuple[str, ...], lower: bool) -> str:
    """The goal that ddpx's best of ``methods`` beats Chemprop's best, on ``metric``."""
    ours, theirs = best(record, methods, "ddpx", metric, lower), best(record, methods, "chemprop", metric, lower)
    if ours is None or theirs is None:
        return f"- {name}: not measured (needs --methods {' or '.join(methods)} for both programs)."
    met = ours[1] < theirs[1] if lower else ours[1] > theirs[1]
    return (
        f"- {name}, the best of each program's {', '.join(methods)}: ddpx {ours[1]:.4f} ({ours[0]}), "
        f"Chemprop {theirs[1]:.4f} ({theirs[0]}). Goal, ddpx {'lower' if lower else 'higher'}: "
        f"**{'met' if met else 'not met'}**."
    )


def goal_lines(record: dict) -> list[str]:
    lines = [coverage_line(record)]
    if record["regression"]:
        lines.append(
            versus_line(record, "Spearman of uncertainty with absolute error", "spearman", ("mve", "ensemble"), False)
        )
    else:
        held = tuple(m for m in CALIBRATED if m in record["methods"]) or CALIBRATED[:2]
        lines.append(versus_line(record, "Expected calibration error of a calibrated model", "ece", held, True))
    return lines


SETTINGS = ("set", "data", "regression", "dev", "heldout", "epochs", "ensemble_size", "methods")


def differing(one: dict, other: dict) -> list[str]:
    """The settings (:data:`SETTINGS`) in which two records differ: records of the same table share them all."""
    return [key for key in SETTINGS if one.get(key) != other.get(key)]


def merged(records: list[dict]) -> dict:
    """One record of the seeds of several (one per seed, say): the same set, data and settings, no seed twice."""
    first, *others = records
    for other in others:
        differ = differing(other, first)
        if differ:
            raise SystemExit(f"records of other {', '.join(differ)} do not make one table: report them one by one")
    seeds = [seed for record in records for seed in record["seeds"]]
    if len(set(seeds)) < len(seeds):
        raise SystemExit(f"a seed is in more than one record (seeds {' '.join(map(str, seeds))}): report them apart")
    scores = {
        method: {program: [run for record in records for run in record["scores"][method][program]] for program in runs}
        for method, runs in first["scores"].items()
    }
    measured = list(dict.fromkeys(record["measured"] for record in records))
    return {**first, "seeds": seeds, "measured": "; ".join(measured), "scores": scores}


def members(count: int) -> str:
    return f"{count} member" + ("" if count == 1 else "s")


def resumed_members(record: dict) -> list[str]:
    """A line for each ensemble whose training was cut off and went on from its next member."""
    return [
        f"{method}, {label}, seed {run['seed']}: cut off after {members(run['members_resumed_from'])}; "
        "each member left trained by its own process (weights seeded as in one; the loader's shuffle restarted)"
        for method, label, run in every_row(record)
        if "members_resumed_from" in run
    ]


def format_report(record: dict) -> str:
    parts = [header(record), "", *table(record), ""]
    notes = failures(record) + resumed_members(record)
    if notes:
        parts += [*notes, ""]
    return "\n".join([*parts, *goal_lines(record)])
