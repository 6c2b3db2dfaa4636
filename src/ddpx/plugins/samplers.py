"""Built-in training samplers: ``distributed`` (torch's DistributedSampler, reshuffled per
epoch) and ``length_bucketed`` (the same shares, with samples of like length side by side).

Both pad the training order so every rank takes the same number of steps — harmless for
training, which is why evaluation never uses a sampler (see :mod:`ddpx.rank.loop.evaluation`).
"""

from __future__ import annotations

from ddpx.api import SamplerSpec, UserError, hookimpl


def build_distributed(dataset, *, rank: int, world_size: int, seed: int):
    from torch.utils.data.distributed import DistributedSampler

    return DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed, drop_last=False)


class LengthBucketedSampler:
    """Each epoch: shuffle (seeded by seed + epoch, the same on every rank), pad to a multiple of
    the world size as DistributedSampler does, cut into pools of ``pool_per_rank × world_size``
    samples, sort each pool by length and deal it to the ranks in turn. Consecutive samples of a
    rank — its batches — then have like lengths, so a padded batch wastes little; which samples
    share a batch still changes every epoch."""

    def __init__(self, lengths, *, rank: int, world_size: int, seed: int, pool_per_rank: int = 256):
        self.lengths, self.rank, self.world_size, self.seed = list(lengths), rank, world_size, seed
        self.pool = pool_per_rank * world_size
        self.num_samples = -(-len(self.lengths) // world_size)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self):
        import torch

        generator = torch.Generator()
        generator.manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.lengths), generator=generator).tolist()
        total = self.num_samples * self.world_size
        order += (order * (-(-total // len(order))))[: total - len(order)]
        mine: list[int] = []
        for start in range(0, total, self.pool):  # every pool's size is a multiple of the world size
            pool = sorted(order[start : start + self.pool], key=self.lengths.__getitem__)
            mine += pool[self.rank :: self.world_size]
        return iter(mine)


def build_length_bucketed(dataset, *, rank: int, world_size: int, seed: int):
    if not callable(getattr(dataset, "lengths", None)):
        raise UserError(
            f"train.sampler=length_bucketed needs a training set that tells each sample's length "
            f"(a lengths() method, as the SMILES tasks' have); {type(dataset).__name__} does not. "
            "Use train.sampler=distributed."
        )
    return LengthBucketedSampler(dataset.lengths(), rank=rank, world_size=world_size, seed=seed)


@hookimpl
def register_samplers(register):
    register(
        SamplerSpec("distributed", "each rank a disjoint shuffled share, reshuffled every epoch", build_distributed)
    )
    register(
        SamplerSpec(
            "length_bucketed",
            "like distributed, with samples of like length in the same batch (less padding for sequences)",
            build_length_bucketed,
        )
    )
