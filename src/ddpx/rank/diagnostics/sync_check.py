"""``train.check_sync``: after a step, are every rank's parameters the same?

Two collectives over all parameters flattened into one vector — the element-wise maximum and
minimum across ranks — then ``torch.allclose`` on each parameter's slice of both, so the check
names the first parameter (in ``named_parameters`` order) that differs, on every rank at once.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


class ParametersOutOfSync(RuntimeError):
    """Ranks hold different parameters: the wrapper failed to keep them equal."""


def check_parameters_in_sync(model: torch.nn.Module, when: str, rtol: float = 1e-5, atol: float = 1e-8) -> None:
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return
    named = [(name, p) for name, p in model.named_parameters()]
    flat = torch.cat([p.detach().reshape(-1).float() for _, p in named])
    highest, lowest = flat.clone(), flat.clone()
    dist.all_reduce(highest, op=dist.ReduceOp.MAX)
    dist.all_reduce(lowest, op=dist.ReduceOp.MIN)
    start = 0
    for name, p in named:
        end = start + p.numel()
        if not torch.allclose(highest[start:end], lowest[start:end], rtol=rtol, atol=atol):
            gap = (highest[start:end] - lowest[start:end]).abs().max().item()
            raise ParametersOutOfSync(
                f"after {when} the ranks hold different values of parameter '{name}' (largest gap {gap:.3g}); "
                f"the model wrapper does not keep the ranks in sync."
            )
        start = end
