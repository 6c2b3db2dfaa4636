"""The GPU check's probe, a ddpx plugin: each rank notes the device it trains on.

Loaded with ``DDPX_PLUGINS=benchmarks.gpu_check.probe`` (the repository root on ``PYTHONPATH``);
every rank writes ``rank-<N>.json`` (rank, local rank, world size, device, the GPU's name) into the
folder ``$DDPX_GPU_CHECK_PROBE`` names, when its fit starts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ddpx.api import hookimpl


@hookimpl
def ddpx_fit_start(context):
    import torch

    folder = Path(os.environ["DDPX_GPU_CHECK_PROBE"])
    folder.mkdir(parents=True, exist_ok=True)
    device = context.device
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    record = {
        "rank": context.rank,
        "local_rank": context.local_rank,
        "world_size": context.world_size,
        "device": str(device),
        "name": name,
    }
    (folder / f"rank-{context.rank}.json").write_text(json.dumps(record), encoding="utf-8")
