"""Batches for training and evaluation: a DataLoader, or a dataset's own batched fast path.

A dataset that has ``get_batch(indices, device, train)`` builds whole batches itself (say, from
a uint8 tensor already on the GPU, augmenting the batch there) and is never indexed sample by
sample. Training still takes this rank's indices from the distributed sampler, epoch by epoch;
evaluation takes its exact shard. Any other dataset goes through a ``DataLoader``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, Sampler, Subset


def has_fast_path(dataset: Dataset) -> bool:
    return callable(getattr(dataset, "get_batch", None))


def index_batches(indices: Sequence[int], batch_size: int) -> Iterator[torch.Tensor]:
    order = torch.as_tensor(list(indices), dtype=torch.long)
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


class FastPathBatches:
    """One epoch of training batches from the sampler's indices, built by the dataset."""

    def __init__(self, dataset: Any, sampler: Sampler, batch_size: int, device: torch.device, drop_last: bool):
        self.dataset, self.sampler, self.batch_size, self.device = dataset, sampler, batch_size, device
        self.drop_last = drop_last

    def __len__(self) -> int:
        rounding = math.floor if self.drop_last else math.ceil
        return rounding(len(self.sampler) / self.batch_size)

    def __iter__(self):
        for indices in index_batches(list(self.sampler), self.batch_size):
            if self.drop_last and len(indices) < self.batch_size:
                return
            yield self.dataset.get_batch(indices, self.device, train=True)


class SkipFirst(Sampler):
    """A sampler's indices without the first ``count`` (a resumed epoch skips what it trained on)."""

    def __init__(self, sampler: Sampler, count: int):
        self.sampler, self.count = sampler, count

    def __iter__(self):
        return itertools.islice(iter(self.sampler), self.count, None)

    def __len__(self) -> int:
        return max(0, len(self.sampler) - self.count)


def training_batches(
    dataset: Dataset,
    sampler: Sampler,
    *,
    batch_size: int,
    device: torch.device,
    num_workers: int,
    collate_fn: Callable | None,
    drop_last: bool = False,
    skip_batches: int = 0,
):
    """This rank's training batches for one epoch (re-iterate after ``sampler.set_epoch``).

    ``skip_batches`` leaves out the epoch's first batches by index, before any sample is loaded or
    augmented, so a resumed epoch draws exactly the random numbers the uninterrupted one did.
    """
    if skip_batches:
        sampler = SkipFirst(sampler, skip_batches * batch_size)
    if has_fast_path(dataset):
        return FastPathBatches(dataset, sampler, batch_size, device, drop_last)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=num_workers,
        drop_last=drop_last,
        collate_fn=collate_fn,
        pin_memory=device.type == "cuda",
        persistent_workers=num_workers > 0,
    )


def evaluation_batches(
    dataset: Dataset, indices: range, *, batch_size: int, device: torch.device, collate_fn: Callable | None
):
    """Batches of exactly ``indices``, in order, without augmentation."""
    if has_fast_path(dataset):
        return (dataset.get_batch(idx, device, train=False) for idx in index_batches(indices, batch_size))
    return DataLoader(Subset(dataset, list(indices)), batch_size=batch_size, shuffle=False, collate_fn=collate_fn)
