"""Launch cost: wall time from the command to the first training step, CPU time, and CLI start-up.

    python benchmarks/launch_cost/run.py [--repeats 5] [--nproc 2]

Side by side in this one run, each repeated and reported as the median:

- ``ddpx recipe mlp_synthetic`` with ``--launcher spawn`` and ``--launcher torchrun``: from
  starting the command to rank 0 entering the training loop (stamped by the
  ``benchmarks/launch_cost/probe.py`` plugin in ``ddpx_fit_start``: data built, model wrapped),
  and the CPU-seconds the whole job took, every process of it (the machine's busy time around it:
  run it with nothing else running);
- a bare ``torchrun`` of the plain DDP script (``benchmarks/common/plain_ddp_mlp.py``) on the same
  data and model, stamped right before its first step;
- ``ddpx --help`` and ``ddpx recipes``: start-up to exit.

The data is the recipe's generator with 1 200 training samples, so that building it costs little.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.common.environment import PLAIN_DDP_MLP, plugin_env

SMALL = ["dataset.train_size=1200", "dataset.dev_size=200", "dataset.heldout_size=200", "train.max_epochs=1"]


def busy_cpu_seconds() -> float:
    """CPU time the whole machine has spent busy (Linux ``/proc/stat``): a job's ranks are not all
    children this process waits for (the fork server's are not), so the machine's count is taken
    around the job, on a machine with nothing else to do."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def to_first_step(command: list[str], stamp: Path, env: dict) -> tuple[float, float]:
    """Seconds from the command to the first training step; CPU-seconds of the whole command."""
    stamp.unlink(missing_ok=True)
    start, cpu = time.time(), busy_cpu_seconds()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return float(stamp.read_text()) - start, busy_cpu_seconds() - cpu


def wall(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def commands(nproc: int, tmp: Path, stamp: Path) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The commands timed to the first training step, and those timed from start-up to exit."""
    ddpx = [sys.executable, "-m", "ddpx"]
    recipe = [
        *ddpx,
        "recipe",
        "mlp_synthetic",
        "--nproc",
        str(nproc),
        "--tracking",
        "none",
        "--run-dir",
        str(tmp / "runs"),
        *SMALL,
    ]
    first_step = {
        "ddpx recipe, --launcher spawn": [*recipe, "--launcher", "spawn"],
        "ddpx recipe, --launcher torchrun": [*recipe, "--launcher", "torchrun"],
        "bare torchrun, plain DDP script": [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={nproc}",
            f"--log-dir={tmp / 'logs'}",
            str(PLAIN_DDP_MLP),
            "--epochs",
            "1",
            "--train-size",
            "1200",
            "--stamp",
            str(stamp),
        ],
    }
    startup = {"ddpx --help": [*ddpx, "--help"], "ddpx recipes": [*ddpx, "recipes"]}
    return first_step, startup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--nproc", type=int, default=2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        stamp = Path(tmp) / "stamp"
        env = {**os.environ, "DDPX_BENCH_STAMP": str(stamp), **plugin_env("benchmarks.launch_cost.probe")}
        first_step, startup = commands(args.nproc, Path(tmp), stamp)
        seconds: dict[str, list[float]] = {name: [] for name in [*first_step, *startup]}
        cpu: dict[str, list[float]] = {name: [] for name in first_step}
        for _ in range(args.repeats):  # interleaved, so drift hits every variant alike
            for name, command in first_step.items():
                first, used = to_first_step(command, stamp, env)
                seconds[name].append(first)
                cpu[name].append(used)
            for name, command in startup.items():
                seconds[name].append(wall(command))

    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores; torch {torch.__version__}; {args.nproc} ranks, "
        f"gloo; median of {args.repeats}"
    )
    print("\n| command | to first training step (s) | CPU-seconds, the whole job (all processes) |")
    print("| --- | --- | --- |")
    for name in first_step:
        print(f"| {name} | {statistics.median(seconds[name]):.2f} | {statistics.median(cpu[name]):.1f} |")
    print("\n| command | start-up to exit (s) |")
    print("| --- | --- |")
    for name in startup:
        print(f"| {name} | {statistics.median(seconds[name]):.2f} |")


if __name__ == "__main__":
    main()
