"""A run's held-out answers read back from its ``reports/heldout_predictions.csv``, and scored.

The file's forms (:mod:`ddpx.records.reports`), each read back into the outputs the run's metric
was computed on:

- binary labels (``bce_with_logits``): ``target``, ``logit``, ``probability``, or each label's
  ``target_X``, ``logit_X``, ``probability_X`` (an empty target is a missing label); the logits
  where the file has them, else the logits of the probabilities;
- several classes (``cross_entropy``): ``target`` (the class), ``predicted``, ``probability``,
  then ``probability_<class>`` per class; the log of the class probabilities (whose softmax is
  them: the argmax and the macro ROC-AUC of the run);
- regression (``mse`` and the losses with a variance): ``target``, ``prediction``, or
  ``target_X``, ``prediction_X`` per target.

Columns of text (a conformal prediction set ``0|1``) and the uncertainty columns are not read.
The metric is the registered one (:func:`score`), so a value read back is the run's own value.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PREDICTIONS = Path("reports") / "heldout_predictions.csv"
LOSS_OF_SCORE = {"logit": "bce_with_logits", "probability": "bce_with_logits", "prediction": "mse"}


class NoValue(Exception):
    """Why an answer cannot be read or scored (the text says it in a sentence)."""


@dataclass(frozen=True)
class HeldoutAnswers:
    """A run's held-out targets and outputs, in dataset order: ``loss`` names their form (logits of
    ``bce_with_logits``, class log-probabilities of ``cross_entropy``, values of ``mse``)."""

    loss: str
    names: tuple[str, ...]  # the labels, classes or targets
    targets: np.ndarray  # (N,) or (N, L); NaN where a sample lacks a label
    outputs: np.ndarray  # (N,), (N, L) or (N, C), float64

    def same_samples(self, other: HeldoutAnswers) -> bool:
        return (
            (self.loss, self.names) == (other.loss, other.names)
            and self.targets.shape == other.targets.shape
            and bool(np.array_equal(self.targets, other.targets, equal_nan=True))
        )


def read_columns(path: Path) -> dict[str, list[float]]:
    """The file's numeric columns (an empty cell is NaN; a column of text is left out)."""
    if not path.is_file():
        raise NoValue(f"{path} does not exist")
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise NoValue(f"{path} holds no sample")
    columns = {name: _numbers([row[name] for row in rows]) for name in rows[0]}
    return {name: values for name, values in columns.items() if values is not None}


def _numbers(cells: list[str]) -> list[float] | None:
    try:
        return [float(cell) if cell != "" else math.nan for cell in cells]
    except ValueError:
        return None


def read_answers(path: Path) -> HeldoutAnswers:
    return answers_of(read_columns(path))


def answers_of(columns: dict[str, list[float]]) -> HeldoutAnswers:
    """The answers of a predictions file's numeric columns, in whichever form the file has."""
    if "predicted" in columns:
        return _classes(columns)
    pairs = _pairs(columns, ("prediction",)) or _pairs(columns, ("logit", "probability"))
    if not pairs:
        raise NoValue("the predictions file holds no target beside a logit, probability or prediction")
    targets = np.array([columns["target" + suffix] for suffix, _ in pairs], dtype=np.float64).T
    outputs = np.array([_as_output(name, columns[name]) for _, name in pairs], dtype=np.float64).T
    if [suffix for suffix, _ in pairs] == [""]:
        targets, outputs = targets[:, 0], outputs[:, 0]
    score = pairs[0][1].split("_", 1)[0]
    return HeldoutAnswers(LOSS_OF_SCORE[score], tuple(s[1:] for s, _ in pairs), targets, outputs)


def _classes(columns: dict[str, list[float]]) -> HeldoutAnswers:
    names = [name for name in columns if name.startswith("probability_")]
    probabilities = np.array([columns[name] for name in names], dtype=np.float64).T
    with np.errstate(divide="ignore"):
        outputs = np.log(probabilities)
    classes = tuple(name[len("probability_") :] for name in names)
    return HeldoutAnswers("cross_entropy", classes, np.asarray(columns["target"], dtype=np.float64), outputs)


def _pairs(columns: dict[str, list[float]], kinds: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(suffix, score column)`` per target: ``target_X`` beside the first of ``kinds`` it has."""
    found: dict[str, str] = {}
    for kind in kinds:
        for name in columns:
            suffix = name[len(kind) :]
            if (name == kind or name.startswith(kind + "_")) and "target" + suffix in columns:
                found.setdefault(suffix, name)
    return [(suffix, found[suffix]) for suffix in sorted(found, key=lambda s: list(columns).index("target" + s))]


def _as_output(name: str, values: list[float]) -> np.ndarray:
    """A score column as the model's output: a probability as its logit (a saturated one, 0 or 1,
    as the largest logit float64 holds), a logit or a value as it is."""
    values = np.asarray(values, dtype=np.float64)
    if not name.startswith("probability"):
        return values
    clipped = np.clip(values, np.finfo(np.float64).tiny, np.nextafter(1.0, 0.0))
    return np.log(clipped) - np.log1p(-clipped)


def score(answers: HeldoutAnswers, metric: str) -> float:
    """The metric of ``answers`` as the run computed it: the registered metric's ``compute`` on the
    targets and outputs (a label or class the split cannot score is left out, as in the run)."""
    from ddpx.contract.errors import UserError

    compute = _metric(metric)
    try:
        return float(compute(answers.targets, answers.outputs))
    except (UserError, ValueError) as exc:
        raise NoValue(f"{metric} cannot be computed from the predictions: {exc}") from None


@functools.cache
def _metric(name: str):
    from ddpx.contract.errors import UserError
    from ddpx.plugin_host.registry import load_registry

    try:
        return load_registry().get("metrics", name).compute
    except UserError as exc:
        raise NoValue(str(exc)) from None
