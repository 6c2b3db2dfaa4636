"""Checkpoints of a sharded model (a wrapper with ``sharded=True``: ``train.wrapper=fsdp``),
written with torch.distributed.checkpoint (DCP).

Every rank writes its shards of the model, of the optimizer state and of the best weights so far
into a folder beside ``last.pt`` (``checkpoints/last-e<epoch>-s<step>.dcp``); rank 0 then writes
``last.pt`` with everything else (epoch, step, every rank's RNG state, model selection, the
recipe) and that folder's name under ``sharded``, and removes the folder the previous
``last.pt`` named. ``last.pt`` is replaced atomically, only once its folder is complete, so it
always names a whole checkpoint. DCP reshards when it loads: a checkpoint of N ranks continues
on M.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch

from ddpx.rank.diagnostics.stall import BEACON


def gathered(state: dict[str, Any]) -> dict[str, torch.Tensor]:
    """A plain state dict of full tensors: every rank calls this (a sharded tensor is all-gathered)."""
    return {k: v.full_tensor() if hasattr(v, "full_tensor") else v for k, v in state.items()}


def sharded_folder(last: Path, epoch: int, step: int) -> Path:
    return last.parent / f"last-e{epoch}-s{step}.dcp"


def save_shards(
    folder: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, best_state: dict[str, Any]
) -> None:
    """Every rank writes its shards (a collective)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_state, optimizer_state = get_state_dict(model, optimizer)
    with BEACON.waiting_in("torch.distributed.checkpoint.save (the sharded checkpoint)"):
        dcp.save(
            {"model": model_state, "optimizer": optimizer_state, "best_model": best_state}, checkpoint_id=str(folder)
        )


def load_shards(folder: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Load this rank's shards of ``folder`` into the model and optimizer, whatever world wrote
    it; returns the best weights so far (sharded like the model)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    model_state, optimizer_state = get_state_dict(model, optimizer)
    everything = {
        "model": model_state,
        "optimizer": optimizer_state,
        "best_model": {k: v.detach().clone() for k, v in model.state_dict().items()},
    }
    with BEACON.waiting_in("torch.distributed.checkpoint.load (the sharded checkpoint)"):
        dcp.load(everything, checkpoint_id=str(folder))
    set_state_dict(model, optimizer, model_state_dict=everything["model"], optim_state_dict=everything["optimizer"])
    return everything["best_model"]


def remove_other_folders(last: Path, keep: Path) -> None:
    """Rank 0, once ``last.pt`` names ``keep``: the folders of earlier checkpoints go."""
    for folder in last.parent.glob("last-e*-s*.dcp"):
        if folder != keep:
            shutil.rmtree(folder, ignore_errors=True)
