"""The ``dp`` wrapper: ``torch.nn.DataParallel``, one process splitting each batch over every
local GPU (for comparison with DDP only: it is single-process and GIL-bound)."""

from __future__ import annotations

import torch

from ddpx.api import UserError


def check_data_parallel(job) -> None:
    if job.world_size != 1:
        raise UserError(
            f"train.wrapper=dp runs one process that drives every local GPU, but this job has {job.world_size} "
            "ranks. Run it with --nproc 1 (and one node), or use train.wrapper=ddp for several processes."
        )


def wrap_data_parallel(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    if device.type != "cuda":
        return torch.nn.DataParallel(model)  # without GPUs it calls the model directly
    return torch.nn.DataParallel(model, device_ids=list(range(torch.cuda.device_count())), output_device=device)
