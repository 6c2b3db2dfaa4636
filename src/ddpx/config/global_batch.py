"""``train.global_batch_size``: the samples of one optimizer step, whatever the number of ranks.

A recipe that states its global batch trains the same schedule on 1 rank as on 8: the per-rank
micro-batch is the global batch over the ranks and ``train.accumulate``, so a run takes the same
number of optimizer steps of the same number of samples on any world size (each rank's share of
an epoch is rounded up as the sampler rounds it, which keeps the count of steps equal). Planning
fills ``train.batch_size`` in for the world size the job runs on, and the run records both.
"""

from __future__ import annotations

from typing import Any

from ddpx.contract.errors import UserError


def per_rank_batch(train: dict[str, Any], world_size: int, elastic: bool = False) -> int:
    """Each rank's micro-batch for ``train.global_batch_size`` on ``world_size`` ranks (``train.batch_size``
    when no global batch is set); a global batch the ranks cannot share evenly is a clear error."""
    total = train.get("global_batch_size", 0)
    if not total:
        return train["batch_size"]
    if elastic:
        raise UserError(
            f"train.global_batch_size={total} is shared out over a fixed number of ranks, but --nnodes MIN:MAX "
            "lets the number change during the run: give a fixed --nnodes, or set the per-rank batch with "
            "train.batch_size=N train.global_batch_size=0."
        )
    share = world_size * train["accumulate"]
    if total % share:
        fits = [n for n in range(1, total + 1) if total % (n * train["accumulate"]) == 0][:6]
        raise UserError(
            f"train.global_batch_size={total} does not split evenly over {world_size} rank(s) × "
            f"train.accumulate={train['accumulate']}: choose --nproc among {', '.join(map(str, fits))}, a "
            f"global batch that is a multiple of {share}, or train.global_batch_size=0 to give train.batch_size "
            "per rank."
        )
    return total // share
