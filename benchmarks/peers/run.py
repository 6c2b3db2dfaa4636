"""ddpx beside its peers: the same model, data, batch and world size trained by ddpx, by
Lightning's Trainer (DDP strategy), by Accelerate and by a plain PyTorch DDP loop, in one run.

    python benchmarks/peers/run.py [--nproc 2] [--epochs 3] [--rounds 3] [--backend gloo|nccl]
    python benchmarks/peers/run.py --dry        # tiny sizes, one round: the code paths, not the numbers

The work is the ``mlp_synthetic`` recipe (4-layer MLP, 1 024 inputs, 32 classes, 10 000 training
samples, batch 64 per rank, SGD lr 0.1). Every variant is started by torchrun (ddpx with
``--launcher torchrun --tracking none``; the others from ``benchmarks/peers/loops.py``), the
rounds interleave the variants in a rotated order, and each reports, as the median over rounds:

- **to first step**: seconds from starting the command to rank 0's first training step;
- **s/epoch, training**: first batch to last optimizer step, the median over the epochs after the
  first; and **whole**: with the dev evaluation (and, for ddpx and Lightning, their per-epoch
  checkpoint, as their users get it by default);
- **peak memory per rank**: the largest over the ranks of the process's resident-set high-water
  mark (CPU) or the allocator's peak (GPU);
- **held-out accuracy** after the last epoch (ddpx's is that of its best dev epoch).

Lightning and Accelerate are in the ``bench`` extra (``pip install -e '.[bench]'``), not in
ddpx's dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.common.environment import plugin_env

HERE = Path(__file__).resolve().parent
VARIANTS = ["plain", "ddpx", "lightning", "accelerate"]
NAMES = {
    "plain": "plain PyTorch DDP loop",
    "ddpx": "ddpx `mlp_synthetic`",
    "lightning": "Lightning Trainer, DDP",
    "accelerate": "Accelerate",
}


def command(variant: str, args: argparse.Namespace, out: Path) -> list[str]:
    if variant == "ddpx":
        return [
            sys.executable,
            "-m",
            "ddpx",
            "recipe",
            "mlp_synthetic",
            "--launcher",
            "torchrun",
            "--nproc",
            str(args.nproc),
            "--backend",
            args.backend,
            "--tracking",
            "none",
            "--run-dir",
            str(out.parent / "runs"),
            f"train.max_epochs={args.epochs}",
            "train.patience=0",
            f"dataset.train_size={args.train_size}",
        ]
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={args.nproc}",
        f"--log-dir={out.parent / 'torchrun-logs'}",
        str(HERE / "loops.py"),
        "--framework",
        variant,
        "--epochs",
        str(args.epochs),
        "--train-size",
        str(args.train_size),
        "--backend",
        args.backend,
        "--out",
        str(out),
    ]


def run_once(variant: str, args: argparse.Namespace, folder: Path) -> dict:
    """One run of one variant; what its ranks wrote, summed up."""
    out = Path(tempfile.mkdtemp(dir=folder)) / variant
    env = {
        **os.environ,
        "DDPX_PEERS_OUT": str(out),
        "DDPX_PEERS_TRAIN_SIZE": str(args.train_size),
        **plugin_env("benchmarks.peers.probe"),
    }
    start = time.time()
    done = subprocess.run(command(variant, args, out), env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{variant} exited {done.returncode}: {(done.stderr or done.stdout)[-2000:]}")
    ranks = [json.loads(p.read_text()) for p in sorted(out.parent.glob(f"{variant}.rank-*.json"))]
    if len(ranks) != args.nproc:
        raise RuntimeError(f"{variant}: {len(ranks)} of {args.nproc} ranks wrote their record")
    rank0 = next(r for r in ranks if r["rank"] == 0)
    later = rank0["epochs"][1:] or rank0["epochs"]
    return {
        "first_step_s": rank0["first_step"] - start,
        "train_s": statistics.median(e["train_s"] for e in later),
        "epoch_s": statistics.median(e["epoch_s"] for e in later),
        "peak_mb": max(r["peak_mb"] for r in ranks),
        "heldout": rank0["heldout_accuracy"],
    }


def measure(args: argparse.Namespace, variants: list[str]) -> dict[str, list[dict]]:
    results: dict[str, list[dict]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            order = variants[round_ % len(variants) :] + variants[: round_ % len(variants)]
            for variant in order:
                results[variant].append(run_once(variant, args, Path(tmp)))
                print(
                    f"round {round_ + 1}/{args.rounds} {variant}: {results[variant][-1]}", file=sys.stderr, flush=True
                )
    return results


def table(results: dict[str, list[dict]]) -> str:
    med = {v: {k: statistics.median(r[k] for r in rows) for k in rows[0]} for v, rows in results.items()}
    base = med.get("plain")
    lines = [
        "| run | to first step (s) | s/epoch, training | vs plain loop | s/epoch, whole | peak memory per rank (MB) "
        "| held-out accuracy |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for variant, m in med.items():
        ratio = f"{m['train_s'] / base['train_s'] - 1:+.1%}" if base and variant != "plain" else "—"
        lines.append(
            f"| {NAMES[variant]} | {m['first_step_s']:.2f} | {m['train_s']:.3f} | {ratio} | {m['epoch_s']:.3f} "
            f"| {m['peak_mb']:,.0f} | {m['heldout']:.4f} |"
        )
    return "\n".join(lines)


def available(variants: list[str]) -> list[str]:
    import importlib.util

    missing = [v for v in ("lightning", "accelerate") if v in variants and importlib.util.find_spec(v) is None]
    if missing:
        print(f"not installed: {', '.join(missing)} (pip install -e '.[bench]'); left out", file=sys.stderr)
    return [v for v in variants if v not in missing]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train-size", type=int, default=10000)
    parser.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help="a comma-separated subset of " + ", ".join(VARIANTS)
    )
    parser.add_argument("--dry", action="store_true", help="4 000 samples, 2 epochs, 1 round")
    args = parser.parse_args()
    if args.dry:
        args.train_size, args.epochs, args.rounds = 4000, 2, 1
    import torch

    variants = available(args.variants.split(","))
    results = measure(args, variants)
    where = torch.cuda.get_device_name() if args.backend == "nccl" else f"CPU, {os.cpu_count()} cores"
    print(
        f"{date.today()}: {where}; {platform.machine()}, torch {torch.__version__}; {args.nproc} ranks "
        f"({args.backend}), {args.train_size} training samples, {args.epochs} epochs, median of {args.rounds} "
        f"round(s){' (dry)' if args.dry else ''}\n"
    )
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
