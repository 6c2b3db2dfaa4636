"""The ``fsdp`` wrapper: PyTorch's fully sharded data parallelism (FSDP2, ``fully_shard``).

Each rank keeps only its shard of every parameter, of its gradient and of the optimizer state;
a layer's full parameters are all-gathered just before its forward (and again for its backward)
and freed after, and gradients are reduce-scattered, so each rank ends a step holding the
averaged gradient of its own shard. The sharding units are the model's top-level parts that hold
parameters (looking through a lone container such as a ``Sequential`` of layers), then the root:
one all-gather per unit, so only one unit's full weights live at a time.

On a CPU, glibc would keep the freed all-gather and reduce-scatter buffers in its heap (its
mmap threshold rises to the size of the buffers it has freed), so the ranks' resident memory would
grow to the unsharded size anyway; the wrapper fixes the threshold at 128 KiB, so large buffers are
mapped and returned to the system when freed (``docs/performance.md`` measures both).

The model is sharded in place: it is its own wrapped module, its state dict holds DTensors, so
ddpx writes its checkpoints with torch.distributed.checkpoint (loadable on another number of
ranks) and exports the best weights gathered into one plain state dict.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager

import torch

from ddpx.api import UserError


def sharding_units(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The submodules sharded on their own, before the root."""
    parent = model
    while True:
        children = [c for c in parent.children() if any(True for _ in c.parameters())]
        if len(children) != 1 or any(True for _ in parent.parameters(recurse=False)):
            return children
        parent = children[0]


M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc)


def return_freed_buffers() -> None:
    """glibc: allocations of 128 KiB and more are mapped, and unmapped when freed."""
    try:
        ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, 128 * 1024)
    except (OSError, AttributeError):
        pass  # not glibc: its allocator decides


def wrap_fully_sharded(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    if device.type == "cpu":
        return_freed_buffers()
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    for unit in sharding_units(model):
        fully_shard(unit, mesh=mesh)
    fully_shard(model, mesh=mesh)

    @contextmanager
    def no_sync():  # gradient accumulation: reduce-scatter once, on the last micro-batch
        model.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            model.set_requires_gradient_sync(True)

    model.no_sync = no_sync
    return model


def check_fully_sharded(job) -> None:
    train = job.config["train"]
    if train["check_sync"]:
        raise UserError(
            "train.check_sync=true compares every rank's full parameters, but with train.wrapper=fsdp each "
            "rank holds only its shard. Set train.check_sync=false (or use train.wrapper=ddp to check)."
        )
    if train["compile"]:
        raise UserError(
            "train.compile=true is not supported with train.wrapper=fsdp in ddpx yet. Set "
            "train.compile=false, or use train.wrapper=ddp to compile."
        )
