"""``ddpx predict --coverage C``: the conformal interval or prediction set of each answered row.

A task's predictor answers a regression's ``prediction`` (``prediction_<target>`` for each of
several targets; with a variance head also ``variance``), or a 0/1 label's ``probability``
(``probability_<label>``): these columns, and the calibration saved with the model
(:mod:`ddpx.records.calibration`), give ``lower`` and ``upper`` (the interval, in the targets'
units) or ``set`` (the classes the set holds, ``0``, ``1`` or ``0|1``; empty when it holds none)
for each target or label, after its answer. A row the model left unanswered gets none.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ddpx.contract.errors import UserError
from ddpx.records.calibration import Calibration


def check_coverage(coverage: float) -> None:
    if not 0 < coverage < 1:
        raise UserError(
            f"--coverage is the share of true values each interval or set holds, between 0 and 1 (such as 0.9), "
            f"not {coverage}."
        )


def with_coverage(table: Any, calibration: Calibration | None, coverage: float) -> Any:
    """``table`` (the predictor's answers) with each target's interval or each label's set at ``coverage``."""
    check_coverage(coverage)
    if calibration is None:
        raise UserError(
            "this model was saved without a calibration (calibration.json, which runs write beside the model "
            "since ddpx records uncertainty): train it again to get intervals or sets, or leave out --coverage."
        )
    if calibration.kind == "multiclass":
        raise UserError(
            "--coverage adds intervals to regression models and sets to 0/1 labels; this model answers one of "
            "several classes per row, and its run records the held-out coverage of its sets instead "
            "(heldout_coverage_90). Leave out --coverage."
        )
    short = [len(s) for s in calibration.scores if math.ceil((len(s) + 1) * coverage) > len(s)]
    if short:
        n = min(short)
        raise UserError(
            f"--coverage {coverage} needs more dev samples than this model's run had ({n} for a target or label): "
            f"with n dev samples the conformal threshold exists up to a coverage of n / (n + 1). Ask for at most "
            f"{math.floor(n / (n + 1) * 1000) / 1000}."
        )
    table = table.copy()
    several = len(calibration.labels) > 1
    for label, q in zip(calibration.labels, calibration.thresholds(coverage)):
        suffix = f"_{label}" if several else ""
        if calibration.kind == "regression":
            answer_interval(table, calibration, suffix, q)
        else:
            answer_set(table, suffix, q)
    return table


def column(table: Any, name: str) -> np.ndarray:
    if name not in table.columns:
        raise UserError(
            f"--coverage reads the predictor's '{name}' column, which this model's answers lack "
            f"(they have {', '.join(map(str, table.columns))}); leave out --coverage."
        )
    return table[name].to_numpy(dtype=np.float64)


def answer_interval(table: Any, calibration: Calibration, suffix: str, q: float) -> None:
    prediction = column(table, f"prediction{suffix}")
    half = q * np.sqrt(column(table, f"variance{suffix}")) if calibration.normalized else np.full_like(prediction, q)
    at = table.columns.get_loc(f"variance{suffix}" if calibration.normalized else f"prediction{suffix}") + 1
    table.insert(at, f"lower{suffix}", prediction - half)
    table.insert(at + 1, f"upper{suffix}", prediction + half)


def answer_set(table: Any, suffix: str, q: float) -> None:
    probability = column(table, f"probability{suffix}")
    sets = []
    for p in probability:
        held = [name for name, inside in (("0", p <= q), ("1", 1 - p <= q)) if inside]
        sets.append(None if p != p else "|".join(held))
    table.insert(table.columns.get_loc(f"probability{suffix}") + 1, f"set{suffix}", sets)
