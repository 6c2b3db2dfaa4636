"""Continuing a checkpoint on another number of ranks (or with another batch size or
accumulation): a node lost, or more GPUs free, or torchrun's elastic restart with a changed
membership — every rank's start looks at the checkpoint the same way.

What stays exact: the weights, the optimizer state, the epochs done, the model selection so far,
and which samples an interrupted epoch still has to train on. Each old rank's remaining share is
read back from the sampler (or from the checkpoint, when the epoch was itself such a remainder),
laid out again in the global order and dealt to the new ranks, padded like the sampler pads, so
every sample of the epoch is trained on once. The epoch's training-loss sums carry over.

What is not exact: the batches' composition, the per-rank random streams (dropout,
augmentation), and the global batch (``batch_size × ranks × accumulate``) when the number of
ranks changes. The learning-rate schedule is rebuilt for this job's optimizer steps per epoch and
advanced to the same point of the run, so it still ends where the run ends.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Any

from torch.utils.data import Sampler

from ddpx.rank.loop.accumulation import optimizer_steps
from ddpx.rank.loop.training_state import TrainingState


class EpochOrder(Sampler):
    """One epoch's fixed indices for this rank (the rest of an interrupted epoch)."""

    def __init__(self, indices: list[int]):
        self.indices = list(indices)

    def __iter__(self):
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)


def orders_left(resume: dict[str, Any], build_sampler: Callable[..., Any], batch_size: int) -> list[list[int]]:
    """What each rank of the world that wrote ``resume`` still had to train on in its epoch."""
    ranks = resume["ranks"]
    consumed = resume["step"] * resume.get("batch_size", batch_size)
    orders = []
    for rank, saved in enumerate(ranks):
        if saved.get("order_left") is not None:
            orders.append(list(saved["order_left"]))
            continue
        sampler = build_sampler(rank=rank, world_size=len(ranks))
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(resume["epoch"] + 1)
        orders.append(list(sampler)[consumed:])
    return orders


def deal(orders: list[list[int]], rank: int, world_size: int) -> list[int]:
    """Rank ``rank``'s share of the old ranks' remaining orders laid out in the global order
    (old rank r's j-th sample at j·N + r), padded by repeating from the start."""
    left = [i for row in itertools.zip_longest(*orders) for i in row if i is not None]
    per_rank = -(-len(left) // world_size)
    padded = list(itertools.islice(itertools.cycle(left), per_rank * world_size))
    return padded[rank::world_size]


def continue_here(
    state: TrainingState,
    resume: dict[str, Any],
    rank: int,
    world_size: int,
    build_sampler: Callable[..., Any],
    train: dict[str, Any],
    rebuild_schedule: Callable[[], Any],
) -> str | None:
    """Fit ``resume`` to this job when its ranks or steps per epoch differ; a line for the user, or None."""
    ranks = resume["ranks"]
    same_world = len(ranks) == world_size
    carried = any(r.get("order_left") is not None for r in ranks)
    same_batch = resume.get("batch_size", train["batch_size"]) == train["batch_size"]
    if resume.get("step") and not (same_world and same_batch and not carried):
        orders = orders_left(resume, build_sampler, train["batch_size"])
        state.epoch_order = orders[rank] if same_world else deal(orders, rank, world_size)
        state.position.step = 0
        if not same_world:
            state.position.totals = [sum(r["totals"][i] for r in ranks) for i in range(2)] if rank == 0 else [0.0, 0.0]
    written_steps = resume.get("steps_per_epoch")
    if written_steps is None or written_steps == state.optimizer_steps_per_epoch:
        return None if same_world else f"continuing on {world_size} rank(s) a checkpoint of {len(ranks)}"
    advance_schedule(state, rebuild_schedule, steps_done(state, resume))
    return (
        f"continuing on {world_size} rank(s) a checkpoint of {len(ranks)}: {written_steps} optimizer steps per "
        f"epoch there, {state.optimizer_steps_per_epoch} here; the learning-rate schedule is rescaled to match"
    )


def steps_done(state: TrainingState, resume: dict[str, Any]) -> int:
    """Optimizer steps this job would have taken to reach the checkpoint's point of the run."""
    epochs_done = resume["epoch"]
    if state.epoch_order is None:
        return epochs_done * state.optimizer_steps_per_epoch
    batches = -(-len(state.epoch_order) // state.batch_size)
    return max(0, (epochs_done + 1) * state.optimizer_steps_per_epoch - optimizer_steps(batches, state.accumulate))


def advance_schedule(state: TrainingState, rebuild_schedule: Callable[[], Any], steps: int) -> None:
    """A fresh schedule for this job's steps, stepped ``steps`` times from the recipe's rate."""
    for group in state.optimizer.param_groups:
        group["lr"] = group.get("initial_lr", group["lr"])
    state.scheduler = rebuild_schedule()
    state.global_step = steps
    if state.scheduler is None:
        return
    with warnings.catch_warnings():  # stepping a schedule without optimizer steps is the point here
        warnings.simplefilter("ignore", UserWarning)
        for _ in range(steps):
            state.scheduler.step()
