"""Calibration fitted on the dev split after training, saved with the model (``calibration.json``
and ``conformal_scores.npz``).

Two parts, both fitted on the best weights' dev predictions only:

- a **calibrator** (``train.calibration``) that changes what the model answers: ``platt`` (each
  label's logit ``z`` becomes ``a z + b``, the logistic regression on the dev logits of Platt's
  targets, :func:`platt_line`) or ``isotonic`` (each label's probability through
  scikit-learn's ``IsotonicRegression``, clipped outside the dev range; saved as its thresholds and
  applied by linear interpolation, as scikit-learn applies it) for 0/1 labels; ``zscaling`` for a
  regression model's variance (each target's variance times ``s^2``, the ``s`` that maximises the
  dev Gaussian likelihood: ``s^2 = mean((y - mean)^2 / variance)``, Chemprop's ``zscaling``);
- **split-conformal** scores of the answered (calibrated) dev predictions, from which an interval
  or a set at any coverage follows: a regression's absolute error, divided by the predicted
  standard deviation when the model predicts a variance; a label's or class's ``1 - probability of
  the true class``. At coverage ``c`` the threshold ``q`` is the ``ceil((n + 1) c)``-th smallest of
  the ``n`` dev scores (infinite when that exceeds ``n``); the interval is ``mean +- q std`` (or
  ``+- q``), the set holds each class whose ``1 - probability`` is at most ``q``. On data
  exchangeable with the dev split, at least ``c`` of the targets fall inside (a scaffold split is
  not exchangeable: ``docs/uncertainty.md``).

Nothing is pickled: the calibrator is JSON, the dev scores are numpy arrays in ``conformal_scores.npz``
(float64, one array per column, sorted; as JSON text they took 12 MB of a 13 MB model for 15 689
molecules × 36 targets), read without pickle; :meth:`Calibration.answer` applies them to raw
outputs. A model saved before the scores had their own file keeps them in ``calibration.json``,
which loads as it did.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ddpx.contract.outputs import has_variance, kind_of
from ddpx.records.atomic_save import removed_if_failed

FILE = "calibration.json"
SCORES_FILE = "conformal_scores.npz"
FORMAT = "ddpx-calibration"


def as_table(values: Any) -> np.ndarray:
    """``(N, T)`` float64 of ``(N,)`` or ``(N, T)`` values."""
    values = np.asarray(values, dtype=np.float64)
    return values.reshape(len(values), -1)


def sigmoid(logits: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-logits))


def logit(probability: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(probability) - np.log1p(-probability)


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


@dataclass
class Calibration:
    """What ``calibration.json`` holds: the run's loss (how to read its outputs), its labels
    (targets, or classes), the calibrator and its fitted values per column; and the dev conformal
    scores per column (sorted; one for several classes), saved beside it."""

    loss: str
    labels: list[str]
    method: str = "none"
    fitted: list[dict[str, Any]] = field(default_factory=list)
    scores: list[Any] = field(default_factory=list)  # sorted float64 arrays (or lists)

    @property
    def kind(self) -> str:
        return kind_of(self.loss)

    @property
    def normalized(self) -> bool:
        """Regression scores divided by the predicted standard deviation."""
        return has_variance(self.loss)

    def answer(self, outputs: Any) -> np.ndarray:
        """The raw outputs of the model (any shape its loss gives) as the calibrated model answers
        them, in float64 and the same shape: logits, or ``(mean, variance)``."""
        outputs = np.array(outputs, dtype=np.float64)
        if self.method in ("platt", "isotonic"):
            columns = as_table(outputs)
            for j, values in enumerate(self.fitted):
                if self.method == "platt":
                    columns[:, j] = values["a"] * columns[:, j] + values["b"]
                else:
                    columns[:, j] = logit(np.interp(sigmoid(columns[:, j]), values["x"], values["y"]))
            return columns.reshape(outputs.shape)
        if self.method == "zscaling":
            variance = as_table(outputs[..., 1]) * np.array([v["scale"] ** 2 for v in self.fitted])
            outputs[..., 1] = variance.reshape(outputs.shape[:-1])
        return outputs

    def thresholds(self, coverage: float) -> np.ndarray:
        """Each column's conformal threshold ``q`` at ``coverage``."""
        return np.array([conformal_threshold(s, coverage) for s in self.scores])

    def save(self, folder: Path) -> Path:
        """``calibration.json`` and the scores' ``conformal_scores.npz`` in ``folder``; the JSON's path."""
        path, scores_path = folder / FILE, folder / SCORES_FILE
        folder.mkdir(parents=True, exist_ok=True)
        with removed_if_failed(scores_path), scores_path.open("wb") as out:
            np.savez_compressed(out, **{f"column_{j}": np.asarray(s, np.float64) for j, s in enumerate(self.scores)})
        values = {"format": FORMAT, "loss": self.loss, "labels": self.labels, "method": self.method}
        values |= {"fitted": self.fitted, "scores": SCORES_FILE}
        with removed_if_failed(path):
            path.write_text(json.dumps(values), encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: Path) -> Calibration | None:
        """The calibration saved in a model folder, or ``None`` (a model from before it was saved)."""
        path = Path(folder) / FILE
        if not path.is_file():
            return None
        values = json.loads(path.read_text(encoding="utf-8"))
        values.pop("format", None)
        if isinstance(values.get("scores"), str):  # the scores' own file (older models hold them inline)
            with np.load(Path(folder) / values["scores"], allow_pickle=False) as saved:
                values["scores"] = [saved[f"column_{j}"] for j in range(len(saved.files))]
        return cls(**values)


def conformal_threshold(sorted_scores: list[float], coverage: float) -> float:
    n = len(sorted_scores)
    rank = math.ceil((n + 1) * coverage)
    return math.inf if n == 0 or rank > n else float(sorted_scores[rank - 1])


def fit_calibration(outputs: Any, targets: Any, loss: str, labels: list[str], method: str) -> Calibration:
    """The calibrator ``method`` and the conformal scores, fitted on dev ``outputs`` and ``targets``."""
    outputs = np.asarray(outputs, dtype=np.float64)
    calibration = Calibration(loss=loss, labels=list(labels), method=method)
    if calibration.kind == "multiclass":
        targets = np.asarray(targets, dtype=np.int64)
        chosen = softmax(outputs)[np.arange(len(targets)), targets]
        calibration.scores = [np.sort(1 - chosen)]
        return calibration
    targets = as_table(targets)
    if method != "none":
        calibration.fitted = [fit_column(method, outputs, targets, j) for j in range(targets.shape[1])]
    calibration.scores = [np.sort(s) for s in conformal_scores(calibration, calibration.answer(outputs), targets)]
    return calibration


def fit_column(method: str, outputs: np.ndarray, targets: np.ndarray, j: int) -> dict[str, Any]:
    """The calibrator's values for column ``j``, fitted on the cells that hold a target."""
    keep = ~np.isnan(targets[:, j])
    y = targets[keep, j]
    if method == "zscaling":
        mean, variance = as_table(outputs[..., 0])[keep, j], as_table(outputs[..., 1])[keep, j]
        return {"scale": math.sqrt(float(np.mean((y - mean) ** 2 / variance))) if len(y) else 1.0}
    z = as_table(outputs)[keep, j]
    if method == "isotonic" and not len(y):  # no label on dev: the probabilities are kept
        return {"x": [0.0, 1.0], "y": [0.0, 1.0]}
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        fitted = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(sigmoid(z), y)
        return {"x": fitted.X_thresholds_.tolist(), "y": fitted.y_thresholds_.tolist()}
    if len(np.unique(y)) < 2:  # one class on dev: nothing to fit, the logits are kept
        return {"a": 1.0, "b": 0.0}
    return platt_line(z, y)


def platt_line(z: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """``a`` and ``b`` of Platt's fit (Platt 1999; scikit-learn's sigmoid calibration): the logistic
    regression of the labels on the logits ``z``, each label ``y`` replaced by Platt's target,
    ``(N+ + 1) / (N+ + 2)`` for a 1 and ``1 / (N- + 2)`` for a 0 (N+, N- the dev counts). The targets
    are never 0 or 1, so a few dev molecules do not make the line overconfident, and dev labels the
    logits separate still give a finite slope."""
    positives = float(np.sum(y == 1))
    return likeliest_line(z, np.where(y == 1, (positives + 1) / (positives + 2), 1 / (len(y) - positives + 2)))


def likeliest_line(z: np.ndarray, target: np.ndarray) -> dict[str, float]:
    """``a`` and ``b`` minimising the cross-entropy of ``sigmoid(a z + b)`` against ``target`` (each in
    [0, 1]): an unpenalised logistic regression that takes soft targets, by BFGS from (1, 0) with
    the exact gradient."""
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    def cross_entropy(line: np.ndarray) -> tuple[float, np.ndarray]:
        s = line[0] * z + line[1]
        residual = expit(s) - target
        value = -np.sum(target * log_expit(s) + (1 - target) * log_expit(-s))
        return float(value), np.array([np.sum(residual * z), np.sum(residual)])

    fitted = minimize(cross_entropy, np.array([1.0, 0.0]), jac=True, method="BFGS", options={"gtol": 1e-9})
    return {"a": float(fitted.x[0]), "b": float(fitted.x[1])}


def conformal_scores(calibration: Calibration, answered: np.ndarray, targets: np.ndarray) -> list[np.ndarray]:
    """Each column's nonconformity scores over the cells that hold a target."""
    scores = []
    if calibration.kind == "regression":
        mean = as_table(answered[..., 0] if calibration.normalized else answered)
        spread = np.sqrt(as_table(answered[..., 1])) if calibration.normalized else np.ones_like(mean)
        for j in range(targets.shape[1]):
            keep = ~np.isnan(targets[:, j])
            scores.append(np.abs(targets[keep, j] - mean[keep, j]) / spread[keep, j])
        return scores
    probability = sigmoid(as_table(answered))
    for j in range(targets.shape[1]):
        keep = ~np.isnan(targets[:, j])
        scores.append(np.where(targets[keep, j] == 1, 1 - probability[keep, j], probability[keep, j]))
    return scores


def intervals(calibration: Calibration, answered: np.ndarray, coverage: float) -> tuple[np.ndarray, np.ndarray]:
    """``(lower, upper)``, each ``(N, T)``, at ``coverage`` around the answered means."""
    q = calibration.thresholds(coverage)
    if calibration.normalized:
        mean, half = as_table(answered[..., 0]), np.sqrt(as_table(answered[..., 1])) * q
    else:
        mean = as_table(answered)
        half = np.broadcast_to(q, mean.shape)
    with np.errstate(invalid="ignore"):  # an infinite threshold times a zero deviation
        half = np.where(np.isinf(q), math.inf, half)
    return mean - half, mean + half


def class_sets(calibration: Calibration, answered: np.ndarray, coverage: float) -> np.ndarray:
    """Which classes each prediction set holds at ``coverage``: ``(N, T, 2)`` booleans (class 0,
    class 1) for 0/1 labels, ``(N, C)`` for several classes."""
    q = calibration.thresholds(coverage)
    if calibration.kind == "multiclass":
        return 1 - softmax(answered) <= q[0]
    probability = sigmoid(as_table(answered))
    return np.stack([probability <= q, 1 - probability <= q], axis=2)
