"""Held-out ROC-AUC of the SMILES recipes on real MoleculeNet files, over seeds, for docs/results.md.

    python benchmarks/moleculenet_quality.py bbbp_rnn --data ~/.cache/ddpx/data/bbbp/BBBP.csv
    python benchmarks/moleculenet_quality.py bbbp_rnn --data .../BBBP.csv --split scaffold dataset.dev_fraction=0.1111111111111111
    python benchmarks/moleculenet_quality.py sider_rnn --data .../sider.csv --seeds 0 1 2

Runs the recipe once per seed through the real CLI (exactly what a user runs: ``ddpx recipe
RECIPE dataset.path=... train.seed=S``, 2 ranks through torchrun by default) and prints Markdown
rows: held-out (mean) ROC-AUC, best epoch, epochs run and wall time, then mean ± sd over the seeds.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path


def run_seed(seed: int, args: argparse.Namespace, workdir: Path) -> dict:
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "ddpx", "recipe", args.recipe, "--launcher", args.launcher, "--nproc", str(args.nproc),
           "--tracking-uri", f"sqlite:///{workdir / 'mlflow.db'}", "--experiment", f"{args.recipe}-quality",
           f"dataset.path={args.data.resolve()}", f"train.seed={seed}", *args.overrides]
    if args.split:
        cmd.append(f"dataset.split={args.split}")
    subprocess.run(cmd, cwd=workdir, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    run_dir = max((workdir / "ddpx-runs").iterdir(), key=lambda p: p.stat().st_mtime)
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"seed": seed, "roc_auc": summary["heldout"]["heldout_roc_auc"], "best_epoch": summary["best_epoch"],
            "epochs": summary["epochs_run"], "samples": summary["heldout_samples"], "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("recipe", help="bbbp_rnn, bace_rnn, clintox_rnn, tox21_rnn, sider_rnn or hiv_rnn")
    parser.add_argument("--data", type=Path, required=True, help="the dataset file (dataset.path)")
    parser.add_argument("--split", choices=["random", "scaffold"], help="dataset.split [default: the recipe's]")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--launcher", default="torchrun")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("overrides", nargs="*", help="extra KEY=VALUE recipe overrides")
    args = parser.parse_intermixed_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run_seed(seed, args, Path(tmp)) for seed in args.seeds]
    print(f"{date.today()}: {platform.machine()}, python {platform.python_version()}; {args.recipe}, split "
          f"{args.split or 'of the recipe'}, {args.nproc} ranks through {args.launcher}; {' '.join(args.overrides)}\n")
    print("| seed | held-out ROC-AUC | best epoch | epochs run | held-out molecules | wall time (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['seed']} | {r['roc_auc']:.4f} | {r['best_epoch']} | {r['epochs']} | {r['samples']} | "
              f"{r['wall_s']:.0f} |")
    values = [r["roc_auc"] for r in rows]
    spread = f" ± {statistics.stdev(values):.4f}" if len(values) > 1 else ""
    print(f"| mean | {statistics.mean(values):.4f}{spread} | | | | {sum(r['wall_s'] for r in rows):.0f} (total) |")


if __name__ == "__main__":
    main()
