"""ddpx's ``dmpnn`` beside Chemprop itself: the same split, the same settings, held-out ROC-AUC
and time, over seeds, as a Markdown table (docs/results.md, docs/performance.md).

    python benchmarks/vs_chemprop.py --set bbbp --data ../shared/data/bbbp/BBBP.csv
    python benchmarks/vs_chemprop.py --set bace --data ../shared/data/moleculenet/bace.csv --seeds 0

For each seed it runs

- Chemprop's own command line, ``chemprop train`` (the ``chemprop`` beside this Python), on the
  exact split ddpx uses: ddpx builds the task's data as its ranks do (MoleculeNet's scaffold split
  80/10/10 of the recipe; the molecules RDKit cannot parse left out), and the molecules it keeps
  are written as a CSV and their train/dev/held-out rows as a Chemprop splits file (``--splits-file``:
  a JSON list of ``{"train": [...], "val": [...], "test": [...]}``). Chemprop's defaults otherwise
  (50 epochs, batch 64, hidden 300, depth 3, its learning-rate schedule), once keeping the epoch
  of lowest validation loss (its default) and once the epoch of highest validation ROC-AUC
  (``--tracking-metric roc``, as ddpx selects);
- ``ddpx recipe <set>_dmpnn --tracking none`` on 1 rank (batch 64) and on 2 ranks (batch 32 per
  rank: the same 64 molecules per optimizer step as Chemprop's), through the spawn launcher,
  keeping the epoch of highest dev ROC-AUC (ddpx's default) or, as ``ddpx1_loss`` and
  ``ddpx2_loss``, of lowest dev loss (``train.select_by=loss``, Chemprop's default).

Held-out ROC-AUC is computed the same way for both (scikit-learn, over the same held-out molecules:
the script checks that Chemprop's test molecules are ddpx's held-out molecules, in order). Seconds
per epoch, training only and whole (with the dev evaluation and the checkpoint): for Chemprop from
a Lightning callback this script adds to Chemprop's command line (``chemprop.cli.main.main``, what
the ``chemprop`` command runs, started as ``python vs_chemprop.py --clocked-chemprop FILE train
...``), which notes when each epoch starts, when its validation starts and when it ends; for ddpx
from its metrics (``samples_per_s`` and ``epoch_s``). Total: the command's wall time, start to exit,
both including Python's imports and featurization.

A second table says where each training epoch goes, the same four phases for both loops: waiting
for the batch, forward with the loss, backward, optimizer step; what is left of the training epoch
is each loop's own bookkeeping. Chemprop's from the callback (a batch from the end of the previous
one to ``on_train_batch_start``; forward to ``on_before_backward``, backward to
``on_after_backward``, the step from ``on_before_optimizer_step`` to ``on_train_batch_end``), ddpx's
from ``train.time_phases=true`` (rank 0's, on 2 ranks; backward includes DDP's all-reduce).

``--alternate`` runs the ``--runs`` in reverse order on every other seed (as given on the first,
third, ... of ``--seeds``, reversed on the second, fourth, ...), so that a machine that drifts
favours neither side; with two runs a third table puts each seed's pair side by side with its ratio.

``--lockstep`` (two runs of one process each) starts the pair together and lets them take turns
epoch by epoch (:mod:`lockstep`: each trains one epoch, with its dev evaluation, while the other
waits blocked on a pipe), so that every epoch of one lies between two of the other's and the
machine's drift falls on both alike; the pairs table then adds the median ratio over all pairs
of epochs. Each run's wall time then includes its waits.

``--profile-steps N --profile-dir DIR`` traces the same optimizer steps of both loops with
``torch.profiler`` — ddpx through ``train.profile_steps``, Chemprop through the same profiler class
driven from the callback (steps counted alike, the trace ending before the first validation) —
and keeps each run's operator table in DIR (``chemprop_roc-seed0-ops.txt``, ``ddpx1-seed0-ops.txt``):
which operators make one loop's step longer than the other's.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import ClassVar

from lockstep import DONE, LOCKSTEP_ENV, make_pipes, turns_from_env  # beside this file
from moleculenet_quality import commit  # beside this file: the commit each table names

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("batch_s", "forward_s", "backward_s", "optimizer_s")
SETS = {  # set: (recipe, extra ddpx overrides for the shared copies of the files)
    "bbbp": ("bbbp_dmpnn", []),
    "bace": ("bace_dmpnn", ["dataset.smiles_column=smiles"]),  # the shared copy names the column `smiles`
    "clintox": ("clintox_dmpnn", []),
    "tox21": ("tox21_dmpnn", []),
    "sider": ("sider_dmpnn", []),
    "hiv": ("hiv_dmpnn", []),
}


def ddpx_split(recipe: str, data: Path, overrides: list[str]):
    """The task's graph data as a rank builds it: ``(smiles, labels, label names, splits)`` with
    ``splits`` the row indices of train, dev and held-out (in ddpx's order) into ``smiles``."""
    from ddpx.api import DataRequest
    from ddpx.config.recipe import resolve_recipe
    from ddpx.plugin_host.registry import load_registry
    from ddpx.plugins.smiles.csv_table import read_smiles_csv

    registry = load_registry()
    recipe_config = resolve_recipe(registry, recipe, [f"dataset.path={data.resolve()}", *overrides])
    params = recipe_config.config["dataset"]
    request = DataRequest(
        params=params,
        seed=0,
        rank=0,
        world_size=1,
        local_rank=0,
        barrier=lambda: None,
        log=lambda text: print(f"ddpx data: {text}", file=sys.stderr),
        inputs="molecule_graph",
    )
    task_data = recipe_config.task.build_data(request)
    names = list(params["label_columns"]) or [params["label_column"]]
    table = read_smiles_csv(Path(params["path"]), params["smiles_column"], names, strict=params["strict"])
    rows = {
        name: list(getattr(task_data, split).rows)
        for name, split in (("train", "train"), ("val", "dev"), ("test", "heldout"))
    }
    return table.smiles, table.labels, names, rows


def write_chemprop_inputs(recipe: str, data: Path, overrides: list[str], folder: Path) -> tuple[list[str], list, list]:
    """``chemprop.csv`` (the molecules ddpx keeps, in file order) and ``splits.json``; returns the
    label names and the held-out SMILES and targets, in ddpx's order."""
    smiles, labels, names, rows = ddpx_split(recipe, data, overrides)
    kept = sorted(set().union(*rows.values()))
    position = {row: i for i, row in enumerate(kept)}
    with (folder / "chemprop.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["smiles", *names])
        for row in kept:
            cells = labels[row] if isinstance(labels[row], tuple) else (labels[row],)
            writer.writerow([smiles[row], *("" if v != v else (int(v) if float(v).is_integer() else v) for v in cells)])
    splits = [{name: [position[row] for row in part] for name, part in rows.items()}]
    (folder / "splits.json").write_text(json.dumps(splits), encoding="utf-8")
    heldout = [labels[row] if isinstance(labels[row], tuple) else (float(labels[row]),) for row in rows["test"]]
    return names, [smiles[row] for row in rows["test"]], heldout


def roc_auc(targets: list, scores: list) -> float:
    """Mean ROC-AUC over the labels, each over the molecules that have it (as ddpx's metric)."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    t = np.asarray(targets, dtype=float).reshape(len(targets), -1)
    s = np.asarray(scores, dtype=float).reshape(len(scores), -1)
    values = []
    for j in range(t.shape[1]):
        present = ~np.isnan(t[:, j])
        if len(set(t[present, j])) == 2:
            values.append(roc_auc_score(t[present, j], s[present, j]))
    return float(np.mean(values))


def clocked_chemprop(record: Path, argv: list[str], profile_steps: int = 0) -> None:
    """Chemprop's command line with a callback noting each epoch's times in ``record`` (JSON) and,
    with ``profile_steps``, tracing that many optimizer steps as ``train.profile_steps`` does in
    ddpx (the table lands beside ``record``, as ``<record stem>-profile/ops.txt``)."""
    import lightning.pytorch as pl
    import torch

    from ddpx.rank.diagnostics.step_profiler import StepProfiler

    profiler = StepProfiler(
        profile_steps,
        torch.device("cpu"),
        record.parent / f"{record.stem}-profile",
        lambda line: print(line, file=sys.stderr),
    )
    turns = turns_from_env()  # --lockstep

    class EpochClock(pl.Callback):
        rows: ClassVar[list] = []

        def on_train_epoch_start(self, trainer, module):
            self.start, self.validation = time.perf_counter(), None
            self.mark, self.phases = self.start, dict.fromkeys(PHASES, 0.0)

        def _until_now(self, phase: str) -> None:
            now = time.perf_counter()
            self.phases[phase] += now - self.mark
            self.mark = now

        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            self._until_now("batch_s")

        def on_before_backward(self, trainer, module, loss):
            self._until_now("forward_s")

        def on_after_backward(self, trainer, module):
            self._until_now("backward_s")

        def on_before_optimizer_step(self, trainer, module, optimizer):
            self.mark = time.perf_counter()  # Lightning's own steps between backward and the update: neither

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            self._until_now("optimizer_s")
            profiler.step()

        def on_validation_start(self, trainer, module):
            if not trainer.sanity_checking:
                self.validation = time.perf_counter()
                profiler.epoch_ended()

        def on_train_start(self, trainer, module):
            if turns:
                turns.start()

        def on_fit_end(self, trainer, module):
            profiler.close()
            if turns:
                turns.finish()

        def on_train_epoch_end(self, trainer, module):
            end = time.perf_counter()
            self.rows.append(
                {"train_s": (self.validation or end) - self.start, "epoch_s": end - self.start, **self.phases}
            )
            record.write_text(json.dumps(self.rows), encoding="utf-8")
            if turns:
                turns.give()

    clock, base = EpochClock(), pl.Trainer

    class ClockedTrainer(base):
        def __init__(self, *args, callbacks=None, **kwargs):
            super().__init__(*args, callbacks=[*(callbacks or []), clock], **kwargs)

    pl.Trainer = ClockedTrainer  # chemprop.cli.train calls pl.Trainer(...)
    sys.argv = ["chemprop", *argv]
    from chemprop.cli.main import main

    main()


@dataclass
class Launch:
    """One run's command, and how to read its result once it has exited (given its wall time)."""

    cmd: list[str]
    read: Callable[[float], dict]
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))


def run_chemprop(
    folder: Path,
    names: list[str],
    heldout: tuple[list, list],
    seed: int,
    tracking: str,
    epochs: int,
    profile_steps: int = 0,
    profile_dir: Path | None = None,
) -> Launch:
    out = folder / f"chemprop-{tracking}-seed{seed}"
    clock = folder / f"clock-{tracking}-seed{seed}.json"
    cmd = [
        sys.executable,
        __file__,
        "--clocked-chemprop",
        str(clock),
        str(profile_steps),
        "train",
        "--data-path",
        str(folder / "chemprop.csv"),
        "--splits-file",
        str(folder / "splits.json"),
        "--task-type",
        "classification",
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
        "roc",
        "--tracking-metric",
        tracking,
        "--output-dir",
        str(out),
    ]

    def read(wall: float) -> dict:
        (predictions,) = sorted(out.rglob("test_predictions.csv"))
        with predictions.open(encoding="utf-8") as handle:
            table = list(csv.DictReader(handle))
        smiles, targets = heldout
        if [r["smiles"] for r in table] != smiles:
            raise SystemExit(f"Chemprop's test molecules are not ddpx's held-out molecules, in order ({predictions})")
        scores = [[float(r[n]) for n in names] for r in table]  # the target columns hold Chemprop's probabilities
        run = "chemprop_loss" if tracking == "val_loss" else "chemprop_roc"
        keep_ops(folder / f"{clock.stem}-profile" / "ops.txt", profile_dir, f"{run}-seed{seed}")
        epochs_seen = json.loads(clock.read_text(encoding="utf-8"))
        training = [e["train_s"] for e in epochs_seen]
        return {
            "value": roc_auc(targets, scores),
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
    overrides: list[str],
    seed: int,
    epochs: int,
    workdir: Path,
    train_size: int,
    profile_steps: int = 0,
    profile_dir: Path | None = None,
) -> Launch:
    """One of the ddpx runs (``ddpx<ranks>``, ``ddpx<ranks>_loss``: see ``LABELS``)."""
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
        return {
            "value": summary["heldout"]["heldout_roc_auc"],
            "epoch_s": statistics.mean(training),
            "epochs": training,
            "whole_epoch_s": statistics.mean(row["epoch_s"] for row in rows),
            "wall_s": wall,
            **{phase: statistics.mean(row[phase] for row in rows) for phase in PHASES},
        }

    return Launch(cmd, read, cwd=workdir)


def run_alone(name: str, launch: Launch) -> dict:
    """Run one launch to its end and read its result."""
    start = time.perf_counter()
    proc = subprocess.run(launch.cmd, cwd=launch.cwd, env=launch.env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return launch.read(wall)


def run_in_lockstep(launches: dict[str, Launch], folder: Path) -> dict[str, dict]:
    """Start the two launches together, taking turns epoch by epoch (:mod:`lockstep`), the first
    named going first; read both results. Each one's wall time runs from the common start to its
    exit, its waits included."""
    (first, a), (second, b) = launches.items()
    pipes = make_pipes(str(folder), [first, second])
    plugins = ",".join(filter(None, [os.environ.get("DDPX_PLUGINS"), "lockstep"]))
    path = os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))
    for name, other, role, launch in ((first, second, "first", a), (second, first, "second", b)):
        launch.env.update(
            {LOCKSTEP_ENV: f"{pipes[name]}:{pipes[other]}:{role}", "DDPX_PLUGINS": plugins, "PYTHONPATH": path}
        )
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


LABELS = {  # the runs --runs can name, as the tables label them
    "chemprop_loss": "Chemprop `chemprop train` (best epoch: lowest val loss, its default)",
    "chemprop_roc": "Chemprop `chemprop train --tracking-metric roc` (best epoch: highest val ROC-AUC)",
    "ddpx1": "ddpx `{recipe}`, 1 rank, batch 64 (best epoch: highest dev ROC-AUC, its default)",
    "ddpx2": "ddpx `{recipe}`, 2 ranks × batch 32 (best epoch: highest dev ROC-AUC)",
    "ddpx1_loss": "ddpx `{recipe}`, 1 rank, batch 64, `train.select_by=loss` (best epoch: lowest dev loss)",
    "ddpx2_loss": "ddpx `{recipe}`, 2 ranks × batch 32, `train.select_by=loss` (best epoch: lowest dev loss)",
}


def summary_row(label: str, results: list[dict]) -> str:
    values = [r["value"] for r in results]
    spread = f" ± {statistics.stdev(values):.4f}" if len(values) > 1 else ""
    per_seed = ", ".join(f"{v:.4f}" for v in values)
    whole = [r["whole_epoch_s"] for r in results if r["whole_epoch_s"] == r["whole_epoch_s"]]
    whole_text = f"{statistics.mean(whole):.2f}" if whole else "—"
    return (
        f"| {label} | {statistics.mean(values):.4f}{spread} | {per_seed} | "
        f"{statistics.mean(r['epoch_s'] for r in results):.2f} | {whole_text} | "
        f"{statistics.mean(r['wall_s'] for r in results):.0f} | {sum(r['wall_s'] for r in results):.0f} |"
    )


def phases_row(label: str, results: list[dict]) -> str:
    """Where a training epoch goes: each phase's mean over epochs and seeds, then the rest."""
    means = [statistics.mean(r[phase] for r in results) for phase in PHASES]
    training = statistics.mean(r["epoch_s"] for r in results)
    cells = " | ".join(f"{m:.3f}" for m in means)
    return f"| {label} | {cells} | {training - sum(means):.3f} | {training:.3f} |"


def run_order(runs: list[str], turn: int, alternate: bool) -> list[str]:
    """The order of a seed's runs: as given, or with ``--alternate`` reversed on every other seed."""
    return runs[::-1] if alternate and turn % 2 else runs


def pairs_table(
    runs: list[str], seeds: list[int], results: dict[str, list[dict]], alternate: bool, lockstep: bool = False
) -> list[str]:
    """Seed by seed, the second run's training epoch against the first's (two runs only): with
    ``--alternate`` half the pairs ran in each order, so drift within a pair cannot favour one side."""
    first, second = runs
    lines = [
        f"| seed | ran first | {first}, s/epoch training | {second} | {second} / {first} |",
        "| --- | --- | --- | --- | --- |",
    ]
    ratios = []
    for turn, seed in enumerate(seeds):
        a, b = results[first][turn]["epoch_s"], results[second][turn]["epoch_s"]
        ratios.append(b / a)
        lines.append(f"| {seed} | {run_order(runs, turn, alternate)[0]} | {a:.2f} | {b:.2f} | {b / a:.3f} |")
    lines.append(
        f"\nmedian {second} / {first}: {statistics.median(ratios):.3f} over {len(ratios)} pairs "
        f"({min(ratios):.3f}–{max(ratios):.3f})"
    )
    if lockstep:  # epoch i of one run lies between epochs i and i + 1 of the other: each a pair too
        by_epoch = [
            b / a
            for turn in range(len(seeds))
            for a, b in zip(results[first][turn]["epochs"], results[second][turn]["epochs"])
        ]
        slower = sum(ratio > 1 for ratio in by_epoch)
        lines.append(
            f"epoch by epoch (lockstep): median {second} / {first} {statistics.median(by_epoch):.3f} over "
            f"{len(by_epoch)} pairs of epochs, {second} the longer in {slower}"
        )
    return lines


def main() -> None:
    if len(sys.argv) > 3 and sys.argv[1] == "--clocked-chemprop":
        clocked_chemprop(Path(sys.argv[2]), sys.argv[4:], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--set", choices=list(SETS), default="bbbp", help="the MoleculeNet set (its <set>_dmpnn recipe)"
    )
    parser.add_argument("--data", type=Path, required=True, help="its CSV file (dataset.path)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument(
        "--runs",
        nargs="+",
        default=["chemprop_loss", "chemprop_roc", "ddpx1", "ddpx2"],
        choices=list(LABELS),
        help="ddpxN: N ranks, the epoch of the best dev ROC-AUC (ddpx's "
        "default); ddpxN_loss: of the lowest dev loss (train.select_by=loss, Chemprop's default)",
    )
    parser.add_argument(
        "--alternate",
        action="store_true",
        help="run the --runs in reverse order on every other seed, so that the machine's drift "
        "within a seed's runs falls on each side alike",
    )
    parser.add_argument(
        "--lockstep",
        action="store_true",
        help="two one-process runs started together, taking turns epoch by epoch (each trains "
        "while the other waits): drift between minutes falls on both alike",
    )
    parser.add_argument(
        "--profile-steps",
        type=int,
        default=0,
        help="trace this many optimizer steps of every run with torch.profiler (0: none)",
    )
    parser.add_argument("--profile-dir", type=Path, help="where each run's operator table goes (with --profile-steps)")
    args = parser.parse_args()
    if bool(args.profile_steps) != bool(args.profile_dir):
        parser.error("--profile-steps and --profile-dir go together")
    if args.epochs <= 2 and any(run.startswith("chemprop") for run in args.runs):
        parser.error("chemprop train needs more epochs than its 2 warm-up epochs: --epochs 3 or more")
    if args.lockstep and (len(args.runs) != 2 or any(run.startswith("ddpx2") for run in args.runs)):
        parser.error("--lockstep takes two --runs of one process each (chemprop_*, ddpx1, ddpx1_loss)")
    recipe, overrides = SETS[args.set]
    labels = {run: label.format(recipe=recipe) for run, label in LABELS.items()}
    results: dict[str, list[dict]] = {run: [] for run in args.runs}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        names, heldout_smiles, heldout_targets = write_chemprop_inputs(recipe, args.data, overrides, folder)
        train_size = len(json.loads((folder / "splits.json").read_text())[0]["train"])
        for turn, seed in enumerate(args.seeds):
            launches = {}
            for run in run_order(args.runs, turn, args.alternate):
                if run.startswith("chemprop"):
                    tracking = "val_loss" if run == "chemprop_loss" else "roc"
                    launches[run] = run_chemprop(
                        folder,
                        names,
                        (heldout_smiles, heldout_targets),
                        seed,
                        tracking,
                        args.epochs,
                        args.profile_steps,
                        args.profile_dir,
                    )
                else:
                    launches[run] = run_ddpx(
                        run,
                        recipe,
                        args.data,
                        overrides,
                        seed,
                        args.epochs,
                        folder,
                        train_size,
                        args.profile_steps,
                        args.profile_dir,
                    )
                if not args.lockstep:  # one after the other: each builds its command as its turn comes
                    results[run].append(run_alone(run, launches.pop(run)))
                    print(f"seed {seed} {run}: {json.dumps(results[run][-1])}", file=sys.stderr, flush=True)
            if args.lockstep:
                for run, result in run_in_lockstep(launches, folder).items():
                    results[run].append(result)
                    print(f"seed {seed} {run}: {json.dumps(result)}", file=sys.stderr, flush=True)
    print(
        f"{date.today()}: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
        f"commit {commit()}; {args.set} ({args.data.name}), MoleculeNet's scaffold split 80/10/10 as ddpx makes it "
        f"({len(heldout_smiles)} held-out molecules), {args.epochs} epochs, seeds {' '.join(map(str, args.seeds))}\n"
    )
    print(
        "| run | held-out ROC-AUC (mean ± sd) | per seed | s/epoch, training | s/epoch, with dev | "
        "s/run | s, all seeds |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for run in args.runs:
        print(summary_row(labels[run], results[run]))
    print("\nWhere a training epoch goes (s, means over epochs and seeds):\n")
    print("| run | waiting for batches | forward and loss | backward | optimizer step | the rest | training epoch |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for run in args.runs:
        print(phases_row(labels[run], results[run]))
    if len(args.runs) == 2:
        print("\nPairs, seed by seed:\n")
        print("\n".join(pairs_table(args.runs, args.seeds, results, args.alternate, args.lockstep)))


if __name__ == "__main__":
    main()
