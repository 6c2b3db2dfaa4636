"""The training checkpoint: rank 0 writes ``last.pt`` (and ``best.pt`` when the epoch improved;
an ensemble member's best weights are written when it has finished, by :mod:`ddpx.rank.loop.ensemble`)
with everything needed to continue exactly — every rank's RNG state and partial-epoch sums
included, gathered from all ranks. A sharded model's tensors go to a torch.distributed.checkpoint
folder that ``last.pt`` names (:mod:`ddpx.rank.checkpoints.sharded`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.distributed as dist

from ddpx.rank.checkpoints.rank_state import rng_state, unwrap
from ddpx.rank.checkpoints.sharded import remove_other_folders, save_shards, sharded_folder
from ddpx.rank.diagnostics.stall import BEACON
from ddpx.records.checkpoint_file import save_checkpoint

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.rank.run_context import RunContext


def gather_rank_states(totals: torch.Tensor, order_left: list[int] | None) -> list[dict[str, Any]]:
    """Every rank's RNG state and partial-epoch sums, in rank order (for exact resumption), and
    the rest of its epoch's order when that epoch was continued from another world size."""
    mine = {"rng": rng_state(), "totals": totals.tolist(), "order_left": order_left}
    if not dist.is_initialized():
        return [mine]
    states: list[Any] = [None] * dist.get_world_size()
    with BEACON.waiting_in("all_gather (the checkpoint's RNG states)"):
        dist.all_gather_object(states, mine)
    return states


def checkpoint_contents(run: RunContext, rank_states: list[dict[str, Any]]) -> dict[str, Any]:
    state, selection, position = run.state, run.state.selection, run.state.position
    tensors = (
        {
            "model": unwrap(state.model).state_dict(),
            "optimizer": state.optimizer.state_dict(),
            "best_model": selection.best_state,
        }
        if not state.sharded
        else {}
    )
    return {
        **tensors,
        "scheduler": state.scheduler.state_dict() if state.scheduler is not None else None,
        "scaler": state.scaler.state_dict() if state.scaler.is_enabled() else None,
        "epoch": position.epoch,
        "step": position.step,
        "batch_size": state.batch_size,
        "steps_per_epoch": state.optimizer_steps_per_epoch,
        "global_step": state.global_step,
        "best": list(selection.best) if selection.best else None,
        "best_epoch": selection.best_epoch,
        "best_metric": selection.best[0] if selection.best else None,
        "stale": selection.stale,
        "ranks": rank_states,
        "rng": rank_states[0]["rng"],
        "tracking_run_id": run.tracker.run_id if run.tracker else None,
        "recipe": run.job.config,
        "task_info": run.data.info,  # what rebuilding the model needs (a vocabulary, say)
        **member_position(run),
    }


def member_position(run: RunContext) -> dict[str, Any]:
    """An ensemble's ``last.pt`` says which member it trains, and the epochs of the members before it."""
    if run.member is None:
        return {}
    return {"ensemble_member": run.member.index, "ensemble_epochs_before": run.member.epochs_before}


def write_last(run: RunContext, improved: bool, totals: torch.Tensor) -> None:
    """Every rank takes part (the RNG states are gathered; a sharded model's shards are written by
    every rank); rank 0 writes the files."""
    state, last = run.state, run.run_dir.last_checkpoint
    order = state.epoch_order
    rank_states = gather_rank_states(totals, None if order is None else order[state.position.step * state.batch_size :])
    folder = None
    if state.sharded:
        folder = sharded_folder(last, state.position.epoch, state.position.step)
        save_shards(folder, state.model, state.optimizer, state.selection.best_state)
    if not run.env.is_main:
        return
    contents = checkpoint_contents(run, rank_states)
    if folder is not None:
        save_checkpoint(last, {**contents, "sharded": folder.name})
        remove_other_folders(last, keep=folder)
        return  # the best weights are in the folder, and exported at the end as model/state_dict.pt
    save_checkpoint(last, contents)
    if improved and run.member is None:  # an ensemble member's best.pt is written when it has finished
        save_checkpoint(run.run_dir.best_checkpoint, contents)
