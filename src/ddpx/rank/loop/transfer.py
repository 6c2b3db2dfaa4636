"""Moving batches to a device: tensors, tuples, lists or dicts of them, and other objects with a
``to(device)`` method (a batched molecular graph, say), which may move in place and return
``None`` (Chemprop's ``BatchMolGraph`` does) or return the moved object."""

from __future__ import annotations

from typing import Any

import torch


def to_device(batch: Any, device: torch.device) -> Any:
    """``batch`` with every tensor in it moved to ``device`` (non-blocking from pinned memory)."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(item, device) for item in batch)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    move = getattr(batch, "to", None)
    if callable(move) and not isinstance(batch, (str, bytes, type)):
        moved = move(device)
        return batch if moved is None else moved
    return batch
