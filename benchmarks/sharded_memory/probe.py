"""The sharded-memory benchmark's probe, a ddpx plugin (``DDPX_PLUGINS=benchmarks.sharded_memory.probe``):
each rank's peak memory while it trains.

At ``ddpx_fit_start`` (model built and wrapped, nothing trained yet) a rank resets its peak —
``torch.cuda.reset_peak_memory_stats`` on a GPU, the kernel's resident-set high-water mark on a
CPU (``/proc/self/clear_refs``) — and notes where it stands; at each ``ddpx_epoch_end`` it writes
``$DDPX_BENCH_MEMORY/rank-N.json``: the peak since then (training steps and dev evaluation), and
the growth over the start. Linux only (it reads ``/proc/self/status``).
"""

import json
import os
from pathlib import Path

import torch

from ddpx import hookimpl

START = {}


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _now_and_peak(device: torch.device) -> tuple[float, float]:
    if device.type == "cuda":
        return torch.cuda.memory_allocated(device) / 2**20, torch.cuda.max_memory_allocated(device) / 2**20
    return _status_mb("VmRSS"), _status_mb("VmHWM")


@hookimpl
def ddpx_fit_start(context):
    if not os.environ.get("DDPX_BENCH_MEMORY"):
        return
    if context.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(context.device)
    else:
        Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts again from the current RSS
    START["mb"] = _now_and_peak(context.device)[0]


@hookimpl
def ddpx_epoch_end(context, epoch, metrics):
    folder = os.environ.get("DDPX_BENCH_MEMORY")
    if not folder:
        return
    _, peak = _now_and_peak(context.device)
    record = {
        "rank": context.rank,
        "start_mb": START["mb"],
        "peak_mb": peak,
        "growth_mb": peak - START["mb"],
        "samples_per_s": metrics["samples_per_s"],
    }
    (Path(folder) / f"rank-{context.rank}.json").write_text(json.dumps(record))
