"""The ``allreduce`` wrapper: data parallelism by hand, with two collectives.

1. At construction every rank overwrites its parameters and buffers with rank 0's
   (``broadcast``), so all ranks start from the same weights.
2. A hook on each parameter's gradient all-reduces it (sum) and divides by the world size as
   the backward pass produces it, so after ``backward()`` every rank holds the same averaged
   gradient and the optimizer steps stay in lockstep.

Unlike DDP there are no buckets and no overlap beyond what autograd's order gives: one blocking
collective per parameter. Buffers (BatchNorm statistics) are not re-broadcast every step as DDP
does, so models with buffers may drift apart in them; ``train.check_sync=true`` shows it.
"""

from __future__ import annotations

import itertools

import torch
import torch.distributed as dist


class AllReduceDataParallel(torch.nn.Module):
    def __init__(self, module: torch.nn.Module):
        super().__init__()
        self.module = module
        self.world_size = dist.get_world_size() if dist.is_initialized() else 1
        if self.world_size > 1:
            with torch.no_grad():
                for tensor in itertools.chain(module.parameters(), module.buffers()):
                    dist.broadcast(tensor, src=0)
            for parameter in module.parameters():
                if parameter.requires_grad:
                    parameter.register_hook(self._average)

    def _average(self, grad: torch.Tensor) -> torch.Tensor:
        reduced = grad.contiguous().clone()
        dist.all_reduce(reduced, op=dist.ReduceOp.SUM)
        return reduced.div_(self.world_size)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)
