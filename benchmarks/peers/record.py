"""What each rank of every peer writes, ddpx's (:mod:`benchmarks.peers.probe`) and the others'
(:mod:`benchmarks.peers.loops`) alike: when its first training step starts, each epoch's seconds,
its peak memory and the held-out accuracy, as ``<out>.rank-N.json``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch


class Record:
    """What one rank notes: first step, epoch times, peak memory, held-out accuracy."""

    def __init__(self, device: torch.device):
        self.device, self.first_step, self.epochs, self._start = device, None, [], 0.0

    def epoch_start(self) -> None:
        if self.first_step is None:
            self.first_step = time.time()
        self._start = time.perf_counter()

    def train_end(self) -> None:
        self.sync()
        self.epochs.append({"train_s": time.perf_counter() - self._start})

    def epoch_end(self, dev_accuracy: float) -> None:
        self.epochs[-1].update(epoch_s=time.perf_counter() - self._start, dev_accuracy=dev_accuracy)

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def write(self, out: Path, rank: int, heldout: float) -> None:
        record = {
            "rank": rank,
            "first_step": self.first_step,
            "epochs": self.epochs,
            "heldout_accuracy": heldout,
            "peak_mb": peak_mb(self.device),
        }
        Path(f"{out}.rank-{rank}.json").write_text(json.dumps(record))


def peak_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")
