"""ddpx's side of ``uncertainty.py``: ``ddpx recipe <set>_dmpnn`` with the uncertainty a method
needs, on 1 rank, batch 64, keeping the epoch of lowest dev loss (``train.select_by=loss``,
Chemprop's default), and what its run folder answers for the held-out molecules
(``reports/heldout_predictions.csv``): the run records its calibration and its 90 % conformal
interval or set itself (``docs/uncertainty.md``).

The targets in the file are checked to be the held-out targets Chemprop is scored on, in order,
and the values the evaluators give from the file are checked against the ones the run logged
(``summary.json``'s ``uncertainty``): the same columns ddpx measured itself. A regression ensemble
is one z-scaled run (``ensemble_zscaling``) that serves two rows: ``ensemble_zscaling`` reads its
``calibrated_variance`` and is checked against ``heldout_<metric>``; ``ensemble`` reads its raw
spread and is checked against what the run logged of its uncalibrated answer,
``heldout_<metric>_uncalibrated`` (its Spearman against ``heldout_spearman``: a scale shared by
every variance keeps their ranking).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from benchmarks.vs_chemprop.chemprop_inputs import same_targets
from benchmarks.vs_chemprop.launches import Launch, run_alone
from benchmarks.vs_chemprop.uncertainty_scores import HeldOut

RUN_OVERRIDES = {  # model kind: what the run adds to the recipe
    "mve": ("model.uncertainty=mve", "train.calibration=zscaling"),
    "platt": ("train.calibration=platt",),
    "isotonic": ("train.calibration=isotonic",),
    # the ensembles (train.ensemble_size: --ensemble-size), of a regression model and of a classifier
    "ensemble_zscaling": ("train.calibration=zscaling",),
    "ensemble_platt": ("train.calibration=platt",),
}
ENSEMBLES = ("ensemble_zscaling", "ensemble_platt")  # the kinds that train --ensemble-size members
UNCALIBRATED = ("ensemble",)  # the methods that read a run's raw answer, whatever its calibrator
LOGGED = {  # the evaluators' names: ddpx's logged metric (``heldout_<name>``)
    "nll": "nll",
    "miscalibration_area": "miscalibration_area",
    "ence": "ence",
    "spearman": "spearman",
    "ece": "ece",
    "coverage": "coverage_90",
    "width": "interval_width_90",
    "set_size": "set_size_90",
}


def ddpx_command(
    recipe: str, data: Path, overrides: tuple[str, ...], kind: str, seed: int, epochs: int, ensemble_size: int
) -> list[str]:
    return [
        sys.executable,
        *("-m", "ddpx", "recipe", recipe, "--tracking", "none", "--launcher", "spawn", "--nproc", "1"),
        f"dataset.path={data.resolve()}",
        *overrides,
        *RUN_OVERRIDES[kind],
        *([f"train.ensemble_size={ensemble_size}"] if kind in ENSEMBLES else []),
        f"train.seed={seed}",
        "train.batch_size=64",
        f"train.max_epochs={epochs}",
        "train.select_by=loss",
    ]


def ddpx_run(
    recipe: str,
    data: Path,
    overrides: tuple[str, ...],
    kind: str,
    seed: int,
    epochs: int,
    ensemble_size: int,
    folder: Path,
) -> Path:
    """Train the run of ``kind`` for ``seed``; its run folder. In a work folder kept from an earlier
    start, a run that finished is not trained again, and one that was cut off goes on from its last
    checkpoint (``--resume auto``, ddpx's own: the same weights as a run never stopped)."""
    runs = folder / f"ddpx-{kind}-seed{seed}"
    earlier = sorted(p for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else []
    if earlier and (earlier[-1] / "summary.json").is_file():
        return earlier[-1]
    command = [*ddpx_command(recipe, data, overrides, kind, seed, epochs, ensemble_size), "--run-dir", str(runs)]
    if earlier:
        command.extend(["--resume", "auto"])
    run_alone(f"ddpx recipe ({kind}, seed {seed})", Launch(command, float, cwd=folder))
    finished = [p for p in runs.iterdir() if (p / "summary.json").is_file()]
    if len(finished) != 1:
        raise SystemExit(f"{runs} holds {len(finished)} finished run(s) of ({kind}, seed {seed}), not one")
    return finished[0]


def heldout_table(run_dir: Path, names: list[str], targets: np.ndarray):
    """The run's held-out predictions, checked to hold ``targets`` in order."""
    import pandas as pd

    path = run_dir / "reports" / "heldout_predictions.csv"
    table = pd.read_csv(path, dtype=dict.fromkeys(columns("set", names), str))  # a set: "0", "1", "0|1" or empty
    theirs = table[columns("target", names)].to_numpy(dtype=np.float64)
    if not same_targets(theirs.tolist(), targets.tolist()):
        raise SystemExit(f"ddpx's held-out targets are not the ones Chemprop is scored on, in order ({path})")
    return table


def columns(name: str, names: list[str]) -> list[str]:
    """A per-target column's names in ddpx's predictions file: ``name`` for one, ``name_<target>`` for several."""
    return [name] if len(names) == 1 else [f"{name}_{n}" for n in names]


def ddpx_heldout(method: str, regression: bool, run_dir: Path, names: list[str], targets: np.ndarray) -> HeldOut:
    """What the table scores for ``method`` from the run folder of its model."""
    table = heldout_table(run_dir, names, targets)

    def read(name: str) -> np.ndarray:
        return table[columns(name, names)].to_numpy(dtype=np.float64)

    if method == "ensemble" and regression:  # the members' spread, squared: Chemprop's ensemble variance
        return HeldOut("variance", {"mean": read("prediction"), "variance": read("ensemble_spread") ** 2})
    if method == "ensemble":
        return HeldOut("probability", {"probability": read("probability")})
    if method in ("mve", "ensemble_zscaling"):  # the variance z-scaled on dev
        return HeldOut("variance", {"mean": read("prediction"), "variance": read("calibrated_variance")})
    if method == "conformal" and regression:
        return HeldOut("interval", {"lower": read("lower"), "upper": read("upper")})
    if method == "conformal":
        sets = table[columns("set", names)].fillna("").to_numpy(dtype=object)
        held = np.vectorize(lambda text, c: c in text.split("|"), otypes=[bool])
        return HeldOut("set", {"holds_0": held(sets, "0"), "holds_1": held(sets, "1")})
    return HeldOut("probability", {"probability": read("calibrated_probability")})


def check_logged(run_dir: Path, method: str, scores: dict[str, float]) -> None:
    """Each score the run also logged must be the value it logged (the same columns read): for a
    method that reads the raw answer of a run with a calibrator, the value logged ``_uncalibrated``
    where there is one (every metric but the Spearman, which a z-scaling leaves as it is)."""
    logged = json.loads((run_dir / "summary.json").read_text(encoding="utf-8")).get("uncertainty", {})
    for name, value in scores.items():
        key = f"heldout_{LOGGED.get(name, '')}"
        if method in UNCALIBRATED and f"{key}_uncalibrated" in logged:
            key = f"{key}_uncalibrated"
        theirs = logged.get(key)
        if theirs is not None and not math.isclose(value, theirs, rel_tol=1e-4, abs_tol=1e-6):
            raise SystemExit(f"{name} from {run_dir}'s held-out predictions is {value}, ddpx logged {theirs}")
