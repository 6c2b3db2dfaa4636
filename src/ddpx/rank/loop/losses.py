"""The losses a task can name: ``cross_entropy``, ``bce_with_logits`` and ``mse``; and
``gaussian_nll`` and ``evidential``, which a model's keys choose for a regression task."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from ddpx.contract.errors import UserError

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits, targets.long())


def _bce_with_logits(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy; with several labels (targets ``(N, L)``) the mean over the cells
    that hold a label — a missing one (NaN) adds nothing to the loss and nothing to the gradient."""
    if targets.dim() < 2:
        return F.binary_cross_entropy_with_logits(logits.reshape(-1), targets.reshape(-1).to(logits.dtype))
    present = ~torch.isnan(targets)
    cells = F.binary_cross_entropy_with_logits(logits, torch.nan_to_num(targets).to(logits.dtype), reduction="none")
    return torch.where(present, cells, torch.zeros_like(cells)).sum() / present.sum().clamp(min=1)


def _mse(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean squared error over the cells that hold a value: one target (targets ``(N,)``, outputs
    ``(N,)`` or ``(N, 1)``) or several (``(N, T)``); a missing cell (NaN) adds nothing to the loss
    and nothing to the gradient. Computed in float32 whatever the outputs' precision."""
    if targets.dim() < 2 or targets.shape[1] == 1:
        outputs, targets = outputs.reshape(-1), targets.reshape(-1)
    present = ~torch.isnan(targets)
    errors = torch.where(present, outputs.float() - torch.nan_to_num(targets.float()), 0.0)
    return (errors * errors).sum() / present.sum().clamp(min=1)


def _gaussian_nll(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The Gaussian negative log-likelihood of the targets under each cell's predicted mean and
    variance (outputs ``(N, 2)`` for one target, ``(N, T, 2)`` for several: ``(mean, variance)``),
    the constant ``log(2 pi) / 2`` included, averaged over the cells that hold a value (a missing
    one, NaN, adds nothing). Variances below 1e-6 count as 1e-6 (torch's ``gaussian_nll_loss``)."""
    mean, variance = outputs[..., 0].float(), outputs[..., 1].float()
    if targets.dim() < 2 or targets.shape[1] == 1:
        mean, variance, targets = mean.reshape(-1), variance.reshape(-1), targets.reshape(-1)
    present = ~torch.isnan(targets)
    cells = F.gaussian_nll_loss(mean, torch.nan_to_num(targets.float()), variance, full=True, reduction="none")
    return torch.where(present, cells, torch.zeros_like(cells)).sum() / present.sum().clamp(min=1)


def _evidential(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Deep evidential regression's loss (Amini et al. 2020; Chemprop's ``EvidentialLoss``, its
    ``v_kl`` 0.2): each cell's Normal-Inverse-Gamma negative log-likelihood plus 0.2 times the
    evidence on its error, over the outputs ``(mean, v, alpha, beta)`` (last axis four) a model
    trains with, averaged over the cells that hold a value. In eval mode the model answers its mean
    and total variance (last axis two): their Gaussian negative log-likelihood."""
    if outputs.shape[-1] == 2:
        return _gaussian_nll(outputs, targets)
    mean, v, alpha, beta = torch.unbind(outputs.float(), dim=-1)
    if targets.dim() < 2 or targets.shape[1] == 1:
        mean, v, alpha, beta, targets = (t.reshape(-1) for t in (mean, v, alpha, beta, targets))
    present = ~torch.isnan(targets)
    residuals = torch.nan_to_num(targets.float()) - mean
    two_b_lambda = 2 * beta * (1 + v)
    nll = (
        0.5 * torch.log(torch.pi / v)
        - alpha * torch.log(two_b_lambda)
        + (alpha + 0.5) * torch.log(v * residuals**2 + two_b_lambda)
        + torch.lgamma(alpha)
        - torch.lgamma(alpha + 0.5)
    )
    cells = nll + 0.2 * ((2 * v + alpha) * residuals.abs() - 1e-8)
    return torch.where(present, cells, torch.zeros_like(cells)).sum() / present.sum().clamp(min=1)


LOSSES: dict[str, LossFn] = {
    "cross_entropy": _cross_entropy,
    "bce_with_logits": _bce_with_logits,
    "mse": _mse,
    "gaussian_nll": _gaussian_nll,
    "evidential": _evidential,
}


def loss_function(name: str) -> LossFn:
    """The mean-reduced loss ``name``."""
    try:
        return LOSSES[name]
    except KeyError:
        raise UserError(f"unknown loss '{name}' declared by a task; use one of {', '.join(LOSSES)}.") from None
