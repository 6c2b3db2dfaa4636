"""Chemprop's side of ``uncertainty.py``: ``chemprop train`` on ddpx's split, ``chemprop predict``
over the dev and held-out molecules, and Chemprop's own calibrators fitted on dev and applied to
the held-out answers, as ``chemprop predict --calibration-method M --cal-path dev.csv`` does.

Why the calibrators are applied here rather than by ``chemprop predict`` itself: in Chemprop 2.3.1
``predict`` writes calibrated uncertainties only for estimators other than ``none`` and
``classification`` (``save_predictions``), so a classification model's Platt-, isotonic- or
conformal-calibrated answers are computed and dropped; one prediction of the dev and held-out
molecules (``predict.csv``: the dev rows, then the held-out rows) with the estimator's raw answers,
then the calibrator that ``--calibration-method`` names (``UncertaintyCalibratorRegistry``,
``Factory.build``) fitted and applied exactly as in ``chemprop/cli/predict.py``
(``make_prediction_for_models``), serves every method of a model with one ``predict`` each.
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from benchmarks.vs_chemprop.launches import Launch, run_alone
from benchmarks.vs_chemprop.uncertainty_scores import HeldOut

ALPHA = 0.1  # --conformal-alpha: the 90 % interval or set
TASKS = {"mve": "regression-mve", "plain": "classification"}  # model kind: --task-type (an ensemble: either)
RESUMED = "resumed.json"  # in an ensemble's folder: the first member a later start trained


class Predicted(NamedTuple):
    """A Chemprop model's raw answers: each ``(N, T)``, the dev rows and the held-out rows; and, for an
    ensemble whose training was cut off and went on, the first member trained by a later start."""

    dev: dict[str, np.ndarray]
    heldout: dict[str, np.ndarray]
    resumed_from: int | None = None


class PredictionRows(NamedTuple):
    """``predict.csv``: the dev molecules, then the held-out ones; and the dev targets ``(N, T)``."""

    path: Path
    dev_smiles: list[str]
    heldout_smiles: list[str]
    dev_targets: np.ndarray


def chemprop() -> str:
    """The ``chemprop`` command beside this Python."""
    command = Path(sys.executable).with_name("chemprop")
    if not command.is_file():
        raise SystemExit(f"no `chemprop` beside {sys.executable}: install chemprop 2.3.1 in this environment")
    return str(command)


def write_prediction_rows(folder: Path) -> PredictionRows:
    """``predict.csv`` (SMILES only) from ``chemprop.csv`` and ``splits.json`` (what
    :func:`write_chemprop_inputs` wrote in ``folder``)."""
    with (folder / "chemprop.csv").open(encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    split = json.loads((folder / "splits.json").read_text(encoding="utf-8"))[0]
    dev, heldout = [rows[i] for i in split["val"]], [rows[i] for i in split["test"]]
    path = folder / "predict.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header[:1])
        writer.writerows(row[:1] for row in dev + heldout)
    targets = np.array([[float(v) if v != "" else np.nan for v in row[1:]] for row in dev], dtype=np.float64)
    return PredictionRows(path, [r[0] for r in dev], [r[0] for r in heldout], targets)


def train_command(
    folder: Path,
    names: list[str],
    seed: int,
    epochs: int,
    task: str,
    ensemble_size: int,
    out: Path,
    first_member: int = 0,
) -> list[str]:
    """``chemprop train`` on ddpx's split (``chemprop.csv``, ``splits.json`` in ``folder``): CPU, one
    device, no workers, batch 64, its defaults otherwise (the epoch of lowest val loss kept). Chemprop
    seeds member ``i``'s weights with ``--pytorch-seed`` + ``i``; ``first_member`` starts that count
    where an ensemble cut off goes on (the data seed, the loader's shuffle, stays ``seed``)."""
    return [
        chemprop(),
        "train",
        *("--data-path", str(folder / "chemprop.csv"), "--splits-file", str(folder / "splits.json")),
        *("--task-type", task, "--smiles-columns", "smiles", "--target-columns", *names),
        *("--epochs", str(epochs), "--batch-size", "64", "--ensemble-size", str(ensemble_size)),
        *("--pytorch-seed", str(seed + first_member), "--data-seed", str(seed)),
        *("--accelerator", "cpu", "--devices", "1", "--num-workers", "0", "--output-dir", str(out)),
    ]


def model_files(out: Path) -> list[Path]:
    """The trained models (``model_<i>/best.pt``), in member order."""
    found = sorted(out.rglob("best.pt"), key=lambda p: int(p.parent.name.removeprefix("model_")))
    if not found:
        raise SystemExit(f"chemprop train left no best.pt under {out}")
    return found


def predict_command(models: list[Path], rows: Path, estimator: str, out: Path) -> list[str]:
    return [
        chemprop(),
        "predict",
        *("-i", str(rows), "--smiles-columns", "smiles", "--model-paths", *map(str, models)),
        *("--uncertainty-method", estimator, "-o", str(out)),
        *("--accelerator", "cpu", "--devices", "1", "--num-workers", "0"),
    ]


def read_predictions(path: Path, names: list[str], rows: PredictionRows) -> Predicted:
    """Chemprop's answers (``<target>``, and ``<target>_unc`` where its estimator writes one), split
    into dev and held-out rows; checks the molecules are ``predict.csv``'s, in order."""
    import pandas as pd

    table = pd.read_csv(path)
    if table["smiles"].tolist() != rows.dev_smiles + rows.heldout_smiles:
        raise SystemExit(f"Chemprop's predictions {path} are not the dev and held-out molecules, in order")
    answers = {"value": table[names].to_numpy(dtype=np.float64)}
    if all(f"{n}_unc" in table for n in names):
        answers["uncertainty"] = table[[f"{n}_unc" for n in names]].to_numpy(dtype=np.float64)
    cut = len(rows.dev_smiles)
    return Predicted({k: v[:cut] for k, v in answers.items()}, {k: v[cut:] for k, v in answers.items()})


def calibrated(name: str, predicted: Predicted, dev_targets: np.ndarray):
    """The held-out uncertainties after Chemprop's calibrator ``name`` (a ``--calibration-method``),
    fitted on dev: as ``make_prediction_for_models`` fits and applies it."""
    import torch
    from chemprop.uncertainty import RegressionCalibrator, UncertaintyCalibratorRegistry
    from chemprop.utils import Factory

    def tensor(values: np.ndarray) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.float32)  # as the model answers

    calibrator = Factory.build(UncertaintyCalibratorRegistry[name], alpha=ALPHA)
    mask = torch.from_numpy(np.isfinite(dev_targets))
    targets = torch.from_numpy(np.nan_to_num(dev_targets, nan=0.0))
    uncertainty = predicted.dev.get("uncertainty", predicted.dev["value"])  # classification: the probabilities
    if isinstance(calibrator, RegressionCalibrator):
        calibrator.fit(tensor(predicted.dev["value"]), tensor(uncertainty), targets, mask)
    else:
        calibrator.fit(tensor(uncertainty), targets, mask)
    held = predicted.heldout.get("uncertainty", predicted.heldout["value"])
    return calibrator.apply(tensor(held)).double().numpy()


def chemprop_heldout(method: str, regression: bool, predicted: Predicted, dev_targets: np.ndarray) -> HeldOut:
    """What the table scores for ``method`` from a model's answers."""
    value = predicted.heldout["value"]
    if method == "ensemble" and regression:  # the members' variance, uncalibrated (as ddpx's spread)
        return HeldOut("variance", {"mean": value, "variance": predicted.heldout["uncertainty"]})
    if method == "ensemble":
        return HeldOut("probability", {"probability": value})
    if method in ("mve", "ensemble_zscaling"):  # the mve or the ensemble estimator's variance, z-scaled on dev
        return HeldOut("variance", {"mean": value, "variance": calibrated("zscaling", predicted, dev_targets)})
    if method == "conformal" and regression:  # half-width: the variance plus the dev quantile
        half = calibrated("conformal-regression", predicted, dev_targets)
        return HeldOut("interval", {"lower": value - half, "upper": value + half})
    if method == "conformal":
        return conformal_sets(predicted, dev_targets)
    calibrator = method.removeprefix("ensemble_")  # platt or isotonic, on one model's or the ensemble's mean
    return HeldOut("probability", {"probability": calibrated(calibrator, predicted, dev_targets)})


def conformal_sets(predicted: Predicted, dev_targets: np.ndarray) -> HeldOut:
    """``conformal-multilabel``'s in-set and out-set, ``(N, T, 2)``, as each label's set: label ``j``
    holds 1 when it is in the out-set, holds 0 when it is not in the in-set."""
    try:
        sets = calibrated("conformal-multilabel", predicted, dev_targets)
    except (ValueError, RuntimeError) as error:  # one label, or a dev molecule without a 0 or a 1
        return HeldOut("unavailable", {}, f"Chemprop's conformal-multilabel failed: {error}")
    return HeldOut("set", {"holds_0": sets[..., 0] == 0, "holds_1": sets[..., 1] == 1})


def fails_whatever_the_model(method: str, regression: bool, dev_targets: np.ndarray) -> str | None:
    """Why Chemprop's calibrator for ``method`` fails on these dev targets whatever a model answers, or
    ``None``: ``conformal-multilabel`` refuses one label and, in 2.3.1, fails on a dev split where a
    molecule has no label 0 or no label 1 (:func:`conformal_sets`). Found by fitting it on a constant
    answer, so no model is trained for a row that cannot be made (Tox21's, HIV's)."""
    if method != "conformal" or regression:
        return None
    constant = np.full(dev_targets.shape, 0.5)
    held = conformal_sets(Predicted({"value": constant}, {"value": constant[:1]}), dev_targets)
    return held.reason if held.kind == "unavailable" else None


def finished_members(out: Path) -> int:
    """How many members, from ``model_0`` on, Chemprop finished in ``out`` (it writes a member's
    ``best.pt`` last, after its test predictions)."""
    count = 0
    while (out / f"model_{count}" / "best.pt").is_file():
        count += 1
    return count


def train_members(command: Callable[..., list[str]], size: int, out: Path, name: str) -> None:
    """Train ``size`` members into ``out`` (``model_<i>``). Started afresh, one ``chemprop train
    --ensemble-size size``; where an earlier start was cut off after some members, they are kept and
    each member left is trained by its own ``chemprop train`` of one model (``model_0`` of a work
    folder, moved to ``model_<i>``; its weights seeded as Chemprop seeds member ``i``, its loader's
    shuffle started again from the data seed, where one process would have gone on with it), so a
    cut-off ensemble of slow members loses at most the member under way. The first member a later
    start trained is kept in ``resumed.json`` (:data:`RESUMED`).

    ``command(size, out, first_member)`` is the ``chemprop train`` command line."""
    marker, done = out / RESUMED, finished_members(out)
    if done >= size:
        return
    if done == 0:
        shutil.rmtree(out, ignore_errors=True)
        run_alone(name, Launch(command(size, out, 0), float))
        return
    if not marker.is_file():
        marker.write_text(json.dumps({"first_member": done}), encoding="utf-8")
    for member in range(done, size):
        work, kept = out / f"member-{member}", out / f"model_{member}"
        for stale in (work, kept):
            shutil.rmtree(stale, ignore_errors=True)
        run_alone(f"{name}, member {member}", Launch(command(1, work, member), float))
        (work / "model_0").rename(kept)
        (work / "config.toml").rename(kept / "config.toml")
        shutil.rmtree(work)


def chemprop_model(
    kind: str, regression: bool, seed: int, epochs: int, ensemble_size: int, names: list[str], rows: PredictionRows
) -> Predicted:
    """Train Chemprop's model of ``kind`` (``mve``, ``plain`` or ``ensemble``) for ``seed`` and
    predict the dev and held-out molecules with its estimator (``--uncertainty-method``: ``mve``,
    ``ensemble`` for a regression ensemble, ``classification`` otherwise). In a work folder kept
    from an earlier start, a model whose training ended is not trained again, nor are answers that
    were written predicted again; a single model whose training was cut off starts over, an
    ensemble goes on from its next member (:func:`train_members`)."""
    folder = rows.path.parent
    out = folder / f"chemprop-{kind}-seed{seed}"
    trained, predictions, predicted = out / "trained.done", out / "predictions.csv", out / "predicted.done"
    task = TASKS[kind] if kind != "ensemble" else ("regression" if regression else "classification")
    size = ensemble_size if kind == "ensemble" else 1
    if not trained.is_file():  # a work folder kept (--keep) holds what an earlier start finished

        def command(members: int, where: Path, first: int) -> list[str]:
            return train_command(folder, names, seed, epochs, task, members, where, first)

        train_members(command, size, out, f"chemprop train ({kind}, seed {seed})")
        trained.touch()
    resumed = out / RESUMED
    first = json.loads(resumed.read_text(encoding="utf-8"))["first_member"] if resumed.is_file() else None
    if not predicted.is_file():
        estimator = "mve" if kind == "mve" else "ensemble" if regression else "classification"
        command = predict_command(model_files(out), rows.path, estimator, predictions)
        run_alone(f"chemprop predict ({kind}, seed {seed})", Launch(command, float))
        predicted.touch()
    return read_predictions(predictions, names, rows)._replace(resumed_from=first)
