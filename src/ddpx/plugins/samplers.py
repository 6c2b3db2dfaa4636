"""Built-in training sampler: ``distributed`` (torch's DistributedSampler, reshuffled per epoch).

It pads the training order so every rank takes the same number of steps — harmless for
training, which is why evaluation never uses a sampler (see :mod:`ddpx.rank.evaluation`).
"""

from __future__ import annotations

from ddpx.api import SamplerSpec, hookimpl


def build_distributed(dataset, *, rank: int, world_size: int, seed: int):
    from torch.utils.data.distributed import DistributedSampler

    return DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed, drop_last=False)


@hookimpl
def register_samplers(register):
    register(SamplerSpec("distributed", "each rank a disjoint shuffled share, reshuffled every epoch", build_distributed))
