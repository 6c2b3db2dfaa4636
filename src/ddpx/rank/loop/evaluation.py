"""Exact distributed evaluation: every sample scored once, the metric computed once.

Each rank scores a disjoint, contiguous shard of the split (shards differ by at most one
sample; no sampler padding, no dropped tail). Every rank calls the model the same number of
times — a rank whose shard needs a batch fewer scores one sample more and drops its output —
so a sharded model (``train.wrapper=fsdp``), whose forward gathers parameters from every rank,
never waits for a rank that has stopped. Outputs, targets and dataset indices are gathered,
the gathered count is checked against the split's size, rows are put back in dataset order,
and the metric is computed on rank 0 over the complete split, then shared with every rank.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import Dataset

from ddpx.contract.errors import UserError
from ddpx.contract.specs import MetricSpec
from ddpx.rank.diagnostics.stall import BEACON
from ddpx.rank.loop.batching import evaluation_batches
from ddpx.rank.loop.losses import LossFn
from ddpx.rank.loop.transfer import to_device
from ddpx.rank.process_group.distributed import all_gather_rows, broadcast_buffers, broadcast_object


def shard_bounds(size: int, rank: int, world_size: int) -> range:
    """The contiguous slice of ``range(size)`` that ``rank`` scores; the slices tile it exactly."""
    return range(size * rank // world_size, size * (rank + 1) // world_size)


@dataclass(frozen=True)
class Evaluation:
    """One split's result: its metric, its mean loss, and how many samples were scored."""

    metric: float
    loss: float
    count: int
    predictions: Predictions | None = None  # rank 0 only, when asked for

    def as_metrics(self, prefix: str, metric_name: str) -> dict[str, float]:
        return {f"{prefix}_{metric_name}": self.metric, f"{prefix}_loss": self.loss}


@dataclass(frozen=True)
class Predictions:
    """The gathered raw outputs and targets of a split, in dataset order (rank 0 only)."""

    outputs: torch.Tensor
    targets: torch.Tensor


@torch.no_grad()
def predict(
    model: torch.nn.Module,
    dataset: Dataset,
    *,
    rank: int,
    world_size: int,
    device: torch.device,
    batch_size: int,
    collate_fn: Callable | None = None,
    autocast: Callable[[], AbstractContextManager[Any]] | None = None,
) -> Predictions:
    """Score ``dataset`` across all ranks, each with rank 0's buffers (as the exported model
    holds them); every rank receives the complete predictions."""
    broadcast_buffers(model)
    size = len(dataset)  # type: ignore[arg-type]
    shard = shard_bounds(size, rank, world_size)
    loader = evaluation_batches(dataset, shard, batch_size=batch_size, device=device, collate_fn=collate_fn)
    forward = _forward(model, device, autocast)
    was_training = model.training
    model.eval()
    outputs, targets = [], []
    for inputs, target in loader:
        outputs.append(forward(inputs))
        targets.append(target.to(device))
        BEACON.touch()
    largest_shard = -(-size // world_size)
    calls = -(-largest_shard // batch_size)
    for _ in range(calls - len(outputs)):  # the same forward calls on every rank; these outputs are dropped
        ((inputs, target),) = evaluation_batches(dataset, range(1), batch_size=1, device=device, collate_fn=collate_fn)
        filler, filler_target = forward(inputs), target.to(device)
    if outputs:
        local_out, local_targets = torch.cat(outputs), torch.cat(targets)
    else:  # a rank with an empty shard still joins the gather, with rows of the right shape
        local_out, local_targets = filler[:0], filler_target[:0]
    model.train(was_training)
    local_index = torch.arange(shard.start, shard.stop, device=device, dtype=torch.long)

    all_out = all_gather_rows(local_out)
    all_targets = all_gather_rows(local_targets)
    all_index = all_gather_rows(local_index)
    if all_index.numel() != size or not torch.equal(torch.sort(all_index).values, torch.arange(size, device=device)):
        raise RuntimeError(f"exact evaluation gathered {all_index.numel()} predictions for a split of {size} samples")
    order = torch.argsort(all_index)
    return Predictions(outputs=all_out[order].cpu(), targets=all_targets[order].cpu())


def _forward(
    model: torch.nn.Module, device: torch.device, autocast: Callable[[], AbstractContextManager[Any]] | None
) -> Callable[[Any], torch.Tensor]:
    def forward(inputs) -> torch.Tensor:
        with autocast() if autocast is not None else nullcontext():
            return model(to_device(inputs, device)).float()

    return forward


def evaluate(
    model: torch.nn.Module,
    dataset: Dataset,
    *,
    metric: MetricSpec,
    loss_fn: LossFn,
    keep_predictions: bool = False,
    point: Callable[[torch.Tensor], torch.Tensor] = lambda outputs: outputs,
    **predict_options: Any,
) -> Evaluation:
    """Exact metric and mean loss of ``model`` on ``dataset``, identical on every rank.

    ``predict_options`` are :func:`predict`'s (rank, world size, device, batch size, ...). With
    ``keep_predictions`` rank 0's result also carries the gathered predictions. The loss reads the
    whole outputs, the metric the point predictions ``point`` takes out of them (the mean of a
    model that also answers a variance: :func:`ddpx.contract.outputs.point_of`).
    """
    preds = predict(model, dataset, **predict_options)
    result = None
    if predict_options["rank"] == 0:
        loss = float(loss_fn(preds.outputs, preds.targets).item())
        value = float(metric.compute(preds.targets.numpy(), point(preds.outputs).numpy()))
        result = Evaluation(metric=value, loss=loss, count=int(preds.targets.shape[0]))
    shared = broadcast_object(result)
    if keep_predictions and predict_options["rank"] == 0:
        return Evaluation(shared.metric, shared.loss, shared.count, preds)
    return shared


def more_metrics(predictions: Predictions | None, metrics: Sequence[MetricSpec], prefix: str) -> dict[str, float]:
    """``{"<prefix>_<metric>": value}`` of each of ``metrics`` over the gathered predictions (rank
    0's; ``{}`` elsewhere); one the split cannot score (a class alone in it, say) is left out."""
    if predictions is None:
        return {}
    targets, outputs = predictions.targets.numpy(), predictions.outputs.numpy()
    values = {}
    for metric in metrics:
        try:
            values[f"{prefix}_{metric.name}"] = float(metric.compute(targets, outputs))
        except (UserError, ValueError):
            continue
    return values


def per_label_metrics(
    predictions: Predictions | None, metric: MetricSpec, labels: Sequence[str], prefix: str
) -> dict[str, float]:
    """``{"<prefix>_<metric>/<label>": value}`` for each of several labels, over the samples
    that have it (a label the metric cannot score in this split — one class only — is left out).
    Names keep to the characters trackers accept."""
    if predictions is None or predictions.targets.dim() < 2 or len(labels) < 2:
        return {}
    targets, outputs = predictions.targets.numpy(), predictions.outputs.numpy()
    values = {}
    for j, label in enumerate(labels):
        present = targets[:, j] == targets[:, j]
        try:
            value = metric.compute(targets[present, j], outputs[present, j])
        except (UserError, ValueError):
            continue
        values[f"{prefix}_{metric.name}/{re.sub(r'[^A-Za-z0-9_. -]', '_', label)}"] = float(value)
    return values
