"""Peak memory per rank and throughput: ``train.wrapper=ddp`` against ``train.wrapper=fsdp``.

    python benchmarks/sharded_memory/run.py [--worlds 2 4] [--hidden 2048] [--layers 8]

Side by side in this one run: ``ddpx recipe mlp_synthetic`` with an MLP large enough for the
difference to show (8 layers of 2048: 27 M parameters, 104 MiB in fp32) and AdamW (two more
copies of the parameters as optimizer state), one epoch, for each wrapper and world size. Each
rank's peak while it trains (steps and dev evaluation) is read by the
``benchmarks/sharded_memory/probe.py`` plugin — resident memory on a CPU, allocated memory on a GPU —
and throughput from the run's ``metrics.jsonl``. On a CPU the peak includes the process's
baseline (the Python interpreter and torch: printed first), which the two wrappers share.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.common.environment import plugin_env


def baseline_mb() -> float:
    """Resident memory of a process that imported torch and did nothing else."""
    code = (
        "import torch, pathlib; print([l for l in pathlib.Path('/proc/self/status').read_text().splitlines() "
        "if l.startswith('VmHWM')][0].split()[1])"
    )
    return int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout) / 1024


def one_job(wrapper: str, world: int, args, tmp: Path) -> dict:
    memory = tmp / f"{wrapper}-{world}"
    memory.mkdir()
    env = {**os.environ, "DDPX_BENCH_MEMORY": str(memory), **plugin_env("benchmarks.sharded_memory.probe")}
    command = [
        sys.executable,
        "-m",
        "ddpx",
        "recipe",
        "mlp_synthetic",
        "--nproc",
        str(world),
        "--tracking",
        "none",
        "--run-dir",
        str(tmp / "runs"),
        f"train.wrapper={wrapper}",
        "train.optimizer=adamw",
        "train.lr=0.001",
        f"model.dim_hidden={args.hidden}",
        f"model.n_layers={args.layers}",
        "train.max_epochs=1",
        f"dataset.train_size={args.samples}",
        "dataset.dev_size=256",
        "dataset.heldout_size=256",
        "train.batch_size=32",
    ]
    subprocess.run(command, check=True, capture_output=True, env=env)
    ranks = [json.loads(p.read_text()) for p in sorted(memory.glob("rank-*.json"))]
    return {
        "peak_mb": max(r["peak_mb"] for r in ranks),
        "growth_mb": max(r["growth_mb"] for r in ranks),
        "samples_per_s": ranks[0]["samples_per_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--samples", type=int, default=1024)
    args = parser.parse_args()
    params = 1024 * args.hidden + (args.layers - 2) * args.hidden**2 + args.hidden * 32
    print(
        f"{platform.node()} · {platform.processor() or platform.machine()} · {os.cpu_count()} cores · "
        f"torch {torch.__version__} · MLP {args.layers}×{args.hidden}: {params / 1e6:.1f} M parameters "
        f"({params * 4 / 2**20:.0f} MiB fp32), AdamW"
    )
    print(f"baseline (python + torch, no model): {baseline_mb():.0f} MiB resident")
    print("| wrapper | ranks | peak per rank (MiB) | growth while training (MiB) | samples/s |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for world in args.worlds:
            for wrapper in ("ddp", "fsdp"):
                result = one_job(wrapper, world, args, Path(tmp))
                print(
                    f"| {wrapper} | {world} | {result['peak_mb']:.0f} | {result['growth_mb']:.0f} | "
                    f"{result['samples_per_s']:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
