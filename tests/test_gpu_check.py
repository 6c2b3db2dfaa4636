"""``benchmarks/gpu_check.py --dry``: every check of the GPU script runs its code paths on the CPU,
so the script that checks ddpx's GPU claims keeps working between GPU sessions."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts ranks

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_check.py"
ROWS = ["auto backend: one device per rank", "synthetic MLP, 1 rank: GPU against CPU", "synthetic MLP, 2 ranks on NCCL",
        "bf16 against fp32", "fp16 with loss scaling against fp32", "MNIST: launch to 99.0 % held-out",
        "fast image path: a batch without waiting for the GPU",
        "ResNet-18, cifar stem, channels-last on, torch.compile off",
        "ResNet-18, cifar stem, channels-last off, torch.compile off",
        "ResNet-18, cifar stem, channels-last on, torch.compile on",
        "ResNet-18, imagenet stem, channels-last on, torch.compile off", "bbbp_rnn: molecules/s",
        "bbbp_dmpnn: molecules/s"]


def test_the_dry_run_runs_every_check_on_the_cpu_and_fails_none():
    done = subprocess.run([sys.executable, str(SCRIPT), "--dry"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    final = done.stdout.split("\n\n")[-1]
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in final.splitlines()[2:]}
    assert list(rows) == ROWS, final
    assert all(cells[2] in ("PASS", "SKIP", "INFO") for cells in rows.values()), final
    assert rows["auto backend: one device per rank"][1] == "cpu, cpu"  # gloo, one CPU rank each
    assert rows["bf16 against fp32"][2] == "PASS" and "dry: CPU" in rows["bf16 against fp32"][3]
    assert rows["fp16 with loss scaling against fp32"][2] == "SKIP"  # fp16 needs a GPU
    walked = rows["ResNet-18, cifar stem, channels-last on, torch.compile off"]
    assert " vs " in walked[1] and walked[2] == "INFO"  # ddpx and the plain DDP loop both ran; not judged dry
    assert rows["ResNet-18, cifar stem, channels-last off, torch.compile off"][2] == "SKIP"  # one row walks the path
    assert rows["bbbp_rnn: molecules/s"][2] == "PASS"


def test_only_runs_the_checks_it_names():
    done = subprocess.run([sys.executable, str(SCRIPT), "--dry", "--only", "fast_path_sync,mnist"], capture_output=True,
                          text=True, timeout=120)
    final = done.stdout.split("\n\n")[-1]
    assert [line.split(" | ")[0].lstrip("| ") for line in final.splitlines()[2:]] == [
        "MNIST: launch to 99.0 % held-out", "fast image path: a batch without waiting for the GPU"], done.stdout
