"""Quality target of the ``bbbp_rnn`` recipe: held-out ROC-AUC over seeds 0, 1, 2 on the real file.

    python benchmarks/bbbp_quality.py --data ~/.cache/ddpx/data/bbbp/BBBP.csv [--nproc 2] [--launcher torchrun]

Runs the recipe once per seed through the real CLI (so exactly what a user runs) and prints a
Markdown table for docs/results.md: held-out ROC-AUC, best epoch, epochs run and wall time.
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
from pathlib import Path


def run_seed(data: Path, seed: int, args: argparse.Namespace, workdir: Path) -> dict:
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "ddpx", "recipe", "bbbp_rnn", "--launcher", args.launcher, "--nproc", str(args.nproc),
           "--tracking-uri", f"sqlite:///{workdir / 'mlflow.db'}", "--experiment", "bbbp-quality",
           f"dataset.path={data}", f"train.seed={seed}", *args.overrides]
    subprocess.run(cmd, cwd=workdir, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    run_dir = max((workdir / "ddpx-runs").iterdir(), key=lambda p: p.stat().st_mtime)
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"seed": seed, "roc_auc": summary["heldout"]["heldout_roc_auc"], "best_epoch": summary["best_epoch"],
            "epochs": summary["epochs_run"], "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--launcher", default="torchrun")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("overrides", nargs="*", help="extra KEY=VALUE recipe overrides")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run_seed(args.data.resolve(), seed, args, Path(tmp)) for seed in args.seeds]
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}; "
          f"{args.nproc} ranks, launcher {args.launcher}\n")
    print("| seed | held-out ROC-AUC | best epoch | epochs run | wall time (s) |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['seed']} | {r['roc_auc']:.4f} | {r['best_epoch']} | {r['epochs']} | {r['wall_s']:.0f} |")
    mean = statistics.mean(r["roc_auc"] for r in rows)
    print(f"| mean | {mean:.4f} | | | {sum(r['wall_s'] for r in rows):.0f} (total) |")


if __name__ == "__main__":
    main()
