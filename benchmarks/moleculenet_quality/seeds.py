"""Each seed of a recipe run through the real command line, what its table says about the machine,
and each seed's result recorded for ``--best-of``."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.moleculenet_quality.predictions import heldout_predictions, write_predictions

# set: (file names looked for under --data-dir, its sub-folders included; extra overrides)
SETS = {
    "bbbp": (["BBBP.csv"], []),
    "bace": (["bace.csv"], ["dataset.smiles_column=smiles"]),  # the shared copy names the column `smiles`
    # ClinTox's file writes most approved drugs in charged, differently ordered SMILES: canonicalised,
    # a string model reads the molecule, not the writing (benchmarks/measurements.md, ClinTox)
    "clintox": (["clintox.csv", "clintox.csv.gz"], ["dataset.canonicalize=true"]),
    "tox21": (["tox21.csv", "tox21.csv.gz"], []),
    "sider": (["sider.csv", "sider.csv.gz"], []),
    "hiv": (["HIV.csv"], []),
    "esol": (["ESOL_delaney-processed.csv", "delaney-processed.csv"], []),
    "lipophilicity": (["Lipophilicity.csv"], []),
}
SCAFFOLD = ["dataset.split=scaffold", "dataset.heldout_fraction=0.1", "dataset.dev_fraction=0.1111111111111111"]
# ../shared/data/README.md: Chemprop's D-MPNN as re-run by GEM, and Uni-Mol, on this split
PUBLISHED = {
    "bbbp": (0.710, 0.729),
    "bace": (0.809, 0.857),
    "clintox": (0.906, 0.919),
    "tox21": (0.759, 0.796),
    "sider": (0.570, None),
    "hiv": (0.771, 0.808),
    "esol": (1.050, 0.788),
    "lipophilicity": (0.683, 0.603),
}


def threads_text() -> str:
    """CPU arithmetic differs in its last digits between thread counts, and a long run drifts apart:
    every table says how many threads each rank had."""
    import os

    return f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset (torchrun: 1 per rank)')}"


def arithmetic() -> dict[str, str]:
    """The torch build and the CPU kernels it picks here (the ranks inherit the environment, so
    theirs): under another kernel set (``ATEN_CPU_CAPABILITY``) a seed trains to other digits."""
    import torch

    return {"torch": torch.__version__, "cpu_kernels": torch.backends.cpu.get_cpu_capability()}


def arithmetic_text() -> str:
    found = arithmetic()
    return f"torch {found['torch']}, CPU kernels {found['cpu_kernels']}"


def run_seed(recipe: str, data: Path, seed: int, overrides: list[str], args: argparse.Namespace, workdir: Path) -> dict:
    start = time.perf_counter()
    tracking = (
        ["--tracking-uri", f"sqlite:///{workdir / 'mlflow.db'}", "--experiment", f"{recipe}-quality"]
        if args.tracking == "mlflow"
        else ["--tracking", args.tracking]
    )
    cmd = [
        sys.executable,
        "-m",
        "ddpx",
        "recipe",
        recipe,
        "--launcher",
        args.launcher,
        "--nproc",
        str(args.nproc),
        *tracking,
        f"dataset.path={data.resolve()}",
        f"train.seed={seed}",
        *overrides,
    ]
    before = set((workdir / "ddpx-runs").glob("*")) if (workdir / "ddpx-runs").is_dir() else set()
    subprocess.run(cmd, cwd=workdir, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    (run_dir,) = set((workdir / "ddpx-runs").glob("*")) - before
    summary = json.loads((run_dir / "summary.json").read_text())
    metric = summary["metric"]
    return {
        "recipe": recipe,
        "seed": seed,
        "metric": metric,
        "greater_is_better": summary["greater_is_better"],
        "value": summary["heldout"][f"heldout_{metric}"],
        "dev": summary["best_dev"],
        "best_epoch": summary["best_epoch"],
        "epochs": summary["epochs_run"],
        "samples": summary["heldout_samples"],
        "wall_s": wall,
        "predictions": heldout_predictions(run_dir / "reports" / "heldout_predictions.csv"),
    }


def record(rows: list[dict], path: Path | None, **fields) -> None:
    """Append one JSON line per seed to ``path`` (``--record``), for ``--best-of``; the seeds'
    ensemble value goes on each of its seeds' lines, and each seed's held-out predictions into
    ``<record>-predictions/`` beside it (for the ensemble of the families)."""
    if path is None:
        return
    folder = path.with_name(path.stem + "-predictions")
    with path.open("a", encoding="utf-8") as out:
        for r in rows:
            line = {**fields, **{k: v for k, v in r.items() if k != "predictions"}}
            if r.get("predictions"):
                name = f"{fields['set']}-{r['recipe']}-{fields['commit']}-{int(time.time() * 1e6)}-seed{r['seed']}.csv"
                line["predictions_file"] = str(
                    write_predictions(r["predictions"], folder / name).relative_to(path.parent)
                )
            out.write(json.dumps(line) + "\n")


def find_file(folder: Path, names: list[str]) -> Path | None:
    return next((p for name in names for p in sorted(folder.rglob(name))), None)
