"""The runs of a seed: each one's command and how to read its result (:class:`Launch`), for
Chemprop (through ``clocked_chemprop.py``) and for ddpx; run one after the other, or two together
taking turns epoch by epoch (:func:`run_in_lockstep`)."""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common.environment import plugin_env
from benchmarks.vs_chemprop.chemprop_inputs import heldout_scores, same_targets
from benchmarks.vs_chemprop.clocked_chemprop import PHASES
from benchmarks.vs_chemprop.lockstep import DONE, LOCKSTEP_ENV, make_pipes

HERE = Path(__file__).resolve().parent


@dataclass
class Launch:
    """One run's command, and how to read its result once it has exited (given its wall time)."""

    cmd: list[str]
    read: Callable[[float], dict]
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))


def chemprop_command(
    folder: Path,
    names: list[str],
    seed: int,
    tracking: str,
    epochs: int,
    profile_steps: int,
    clock: Path,
    out: Path,
    regression: bool = False,
) -> list[str]:
    """``chemprop train`` with the clock (``clocked_chemprop.py``) on the inputs in ``folder``: CPU,
    one device, no workers, ``tracking`` the metric that picks the best epoch (``val_loss``, or
    ``roc`` for a classification set and ``rmse`` for a regression set)."""
    task, metrics = ("regression", ["rmse", "mae"]) if regression else ("classification", ["roc"])
    return [
        sys.executable,
        str(HERE / "clocked_chemprop.py"),
        str(clock),
        str(profile_steps),
        "train",
        "--data-path",
        str(folder / "chemprop.csv"),
        "--splits-file",
        str(folder / "splits.json"),
        "--task-type",
        task,
        "--smiles-columns",
        "smiles",
        "--target-columns",
        *names,
        "--epochs",
        str(epochs),
        "--batch-size",
        "64",
        "--pytorch-seed",
        str(seed),
        "--data-seed",
        str(seed),
        "--accelerator",
        "cpu",
        "--devices",
        "1",
        "--num-workers",
        "0",
        "--metrics",
        *metrics,
        "--tracking-metric",
        tracking,
        "--output-dir",
        str(out),
    ]


def run_chemprop(
    folder: Path,
    names: list[str],
    heldout: tuple[list, list],
    seed: int,
    tracking: str,
    epochs: int,
    profile_steps: int = 0,
    profile_dir: Path | None = None,
    regression: bool = False,
) -> Launch:
    out = folder / f"chemprop-{tracking}-seed{seed}"
    clock = folder / f"clock-{tracking}-seed{seed}.json"
    cmd = chemprop_command(folder, names, seed, tracking, epochs, profile_steps, clock, out, regression)

    def read(wall: float) -> dict:
        (predictions,) = sorted(out.rglob("test_predictions.csv"))
        with predictions.open(encoding="utf-8") as handle:
            table = list(csv.DictReader(handle))
        smiles, targets = heldout
        if [r["smiles"] for r in table] != smiles:
            raise SystemExit(f"Chemprop's test molecules are not ddpx's held-out molecules, in order ({predictions})")
        scores = [
            [float(r[n]) for n in names] for r in table
        ]  # Chemprop's probabilities, or values in the file's units
        run = "chemprop_loss" if tracking == "val_loss" else f"chemprop_{tracking}"
        keep_ops(folder / f"{clock.stem}-profile" / "ops.txt", profile_dir, f"{run}-seed{seed}")
        epochs_seen = json.loads(clock.read_text(encoding="utf-8"))
        training = [e["train_s"] for e in epochs_seen]
        return {
            **heldout_scores(regression, targets, scores),
            "epoch_s": statistics.mean(training),
            "epochs": training,
            "whole_epoch_s": statistics.mean(e["epoch_s"] for e in epochs_seen),
            "wall_s": wall,
            **{phase: statistics.mean(e[phase] for e in epochs_seen) for phase in PHASES},
        }

    return Launch(cmd, read, env={**os.environ, "COLUMNS": "200"})


def keep_ops(ops: Path, profile_dir: Path | None, name: str) -> None:
    """Copy a run's operator table into ``profile_dir`` as ``<name>-ops.txt`` (when profiling)."""
    if profile_dir is not None:
        if not ops.is_file():
            raise SystemExit(f"{name}: no operator table at {ops} (the run was too short for the trace?)")
        profile_dir.mkdir(parents=True, exist_ok=True)
        (profile_dir / f"{name}-ops.txt").write_text(ops.read_text(encoding="utf-8"), encoding="utf-8")


def run_ddpx(
    run: str,
    recipe: str,
    data: Path,
    overrides: Sequence[str],
    seed: int,
    epochs: int,
    workdir: Path,
    train_size: int,
    profile_steps: int = 0,
    profile_dir: Path | None = None,
    heldout: tuple[list[str], list] | None = None,
) -> Launch:
    """One of the ddpx runs (``ddpx<ranks>``, ``ddpx<ranks>_loss``: see ``LABELS``); with
    ``heldout`` (a regression set's target names and held-out targets) its RMSE and MAE are computed
    from its held-out predictions as Chemprop's are (:func:`ddpx_regression_scores`)."""
    nproc, select_by = int(run[4]), "loss" if run.endswith("_loss") else "metric"
    batch = 64 // nproc  # Chemprop's 64 molecules per optimizer step, whatever the number of ranks
    cmd = [
        sys.executable,
        "-m",
        "ddpx",
        "recipe",
        recipe,
        "--tracking",
        "none",
        "--launcher",
        "spawn",
        "--nproc",
        str(nproc),
        f"dataset.path={data.resolve()}",
        *overrides,
        f"train.seed={seed}",
        f"train.batch_size={batch}",
        f"train.max_epochs={epochs}",
        "train.time_phases=true",
        f"train.profile_steps={profile_steps}",
        f"train.select_by={select_by}",
    ]
    runs = workdir / "ddpx-runs"
    before = set(runs.glob("*")) if runs.is_dir() else set()

    def read(wall: float) -> dict:
        (run_dir,) = set(runs.glob("*")) - before
        summary = json.loads((run_dir / "summary.json").read_text())
        lines = (run_dir / "metrics.jsonl").read_text().splitlines()
        rows = [row for row in map(json.loads, filter(None, lines)) if "epoch_s" in row]
        keep_ops(run_dir / "profile" / "ops.txt", profile_dir, f"{run}-seed{seed}")
        training = [train_size / row["samples_per_s"] for row in rows]  # training only
        scores = ddpx_regression_scores(run_dir, summary, *heldout) if heldout else None
        return {
            **(scores or {"value": summary["heldout"]["heldout_roc_auc"]}),
            "epoch_s": statistics.mean(training),
            "epochs": training,
            "whole_epoch_s": statistics.mean(row["epoch_s"] for row in rows),
            "wall_s": wall,
            **{phase: statistics.mean(row[phase] for row in rows) for phase in PHASES},
        }

    return Launch(cmd, read, cwd=workdir)


def ddpx_regression_scores(run_dir: Path, summary: dict, names: list[str], targets: list) -> dict:
    """RMSE and MAE from a ddpx run's ``heldout_predictions.csv`` (in the targets' units), computed as
    for Chemprop's predictions; checks that its targets are ``targets`` in order (the same molecules)
    and that its RMSE is the one ddpx logged."""
    (predictions,) = sorted(run_dir.rglob("heldout_predictions.csv"))
    with predictions.open(encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    suffixes = [""] if len(names) == 1 else [f"_{name}" for name in names]
    cell = lambda text: float(text) if text != "" else float("nan")  # noqa: E731
    theirs = [[cell(r[f"target{s}"]) for s in suffixes] for r in table]
    if not same_targets(theirs, targets):
        raise SystemExit(f"ddpx's held-out targets are not the ones Chemprop is scored on, in order ({predictions})")
    scores = heldout_scores(True, targets, [[float(r[f"prediction{s}"]) for s in suffixes] for r in table])
    logged = summary["heldout"]["heldout_rmse"]
    if abs(scores["value"] - logged) > 1e-4 * max(1.0, logged):
        raise SystemExit(f"RMSE from {predictions} is {scores['value']}, ddpx logged {logged}")
    return scores


def run_alone(name: str, launch: Launch) -> dict:
    """Run one launch to its end and read its result."""
    start = time.perf_counter()
    proc = subprocess.run(launch.cmd, cwd=launch.cwd, env=launch.env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return launch.read(wall)


def run_in_lockstep(launches: dict[str, Launch], folder: Path) -> dict[str, dict]:
    """Start the two launches together, taking turns epoch by epoch (:mod:`benchmarks.vs_chemprop.lockstep`), the first
    named going first; read both results. Each one's wall time runs from the common start to its
    exit, its waits included."""
    (first, a), (second, b) = launches.items()
    pipes = make_pipes(str(folder), [first, second])
    plugins = plugin_env(*filter(None, [os.environ.get("DDPX_PLUGINS")]), "benchmarks.vs_chemprop.lockstep")
    for name, other, role, launch in ((first, second, "first", a), (second, first, "second", b)):
        launch.env.update({LOCKSTEP_ENV: f"{pipes[name]}:{pipes[other]}:{role}", **plugins})
    start, procs, walls = time.perf_counter(), {}, {}
    logs = {name: (folder / f"{name}.log").open("w+") for name in launches}
    for name, launch in launches.items():
        procs[name] = subprocess.Popen(
            launch.cmd, cwd=launch.cwd, env=launch.env, stdout=logs[name], stderr=subprocess.STDOUT, text=True
        )
    while len(walls) < 2:
        for name, proc in procs.items():
            if name not in walls and proc.poll() is not None:
                walls[name] = time.perf_counter() - start
                other = second if name == first else first
                fd = os.open(pipes[other], os.O_RDWR)  # it never waits for this one again
                os.write(fd, DONE)
                os.close(fd)
        time.sleep(0.5)
    results = {}
    for name, proc in procs.items():
        with logs[name] as log:
            log.seek(0)
            if proc.returncode:
                raise SystemExit(f"{name} failed:\n{log.read()[-6000:]}")
        results[name] = launches[name].read(walls[name])
        os.unlink(pipes[name])
    return results
