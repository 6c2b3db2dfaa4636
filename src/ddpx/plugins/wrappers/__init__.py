"""Built-in model wrappers (``train.wrapper``): how a model becomes data-parallel.

- ``ddp`` (default): ``torch.nn.parallel.DistributedDataParallel`` — bucketed gradient
  all-reduce overlapped with the backward pass. In a world of one rank the model is left plain:
  DDP would synchronise nothing and costs about a second to set up.
- ``allreduce``: a hand-made wrapper in the style the DDP tutorials build by hand — rank 0's
  weights broadcast at the start, every gradient all-reduced and averaged from a hook on the
  backward pass (:mod:`ddpx.plugins.wrappers.allreduce`). Same results as ``ddp``, slower: one
  collective per parameter, no bucketing. For learning and comparison.
- ``fsdp``: PyTorch's FSDP2 (``fully_shard``) — parameters, gradients and optimizer state
  sharded across ranks (:mod:`ddpx.plugins.wrappers.fully_sharded`); checkpoints through
  torch.distributed.checkpoint.
- ``dp``: ``torch.nn.DataParallel``, one process driving every local GPU
  (:mod:`ddpx.plugins.wrappers.data_parallel`). For comparison only; needs ``--nproc 1``.
"""

from __future__ import annotations

from ddpx.api import WrapperSpec, hookimpl


def _ddp(model, device):
    import torch.distributed as dist

    if not dist.is_initialized() or dist.get_world_size() == 1:
        return model  # nothing to synchronise: the plain model (as Lightning and Accelerate do on one device)
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)


def _allreduce(model, device):
    from ddpx.plugins.wrappers.allreduce import AllReduceDataParallel

    return AllReduceDataParallel(model)


def _fsdp(model, device):
    from ddpx.plugins.wrappers.fully_sharded import wrap_fully_sharded

    return wrap_fully_sharded(model, device)


def _check_fsdp(job) -> None:
    from ddpx.plugins.wrappers.fully_sharded import check_fully_sharded

    check_fully_sharded(job)


def _dp(model, device):
    from ddpx.plugins.wrappers.data_parallel import wrap_data_parallel

    return wrap_data_parallel(model, device)


def _check_dp(job) -> None:
    from ddpx.plugins.wrappers.data_parallel import check_data_parallel

    check_data_parallel(job)


@hookimpl
def register_wrappers(register):
    register(WrapperSpec("ddp", "DistributedDataParallel: bucketed all-reduce overlapped with backward", _ddp))
    register(
        WrapperSpec("allreduce", "hand-made: broadcast at start, all-reduce each gradient from a hook", _allreduce)
    )
    register(
        WrapperSpec(
            "fsdp",
            "FSDP2 (fully_shard): parameters, gradients and optimizer state sharded across ranks",
            _fsdp,
            check=_check_fsdp,
            sharded=True,
        )
    )
    register(
        WrapperSpec("dp", "torch.nn.DataParallel: one process over every local GPU (--nproc 1)", _dp, check=_check_dp)
    )
