"""An ensemble's answer: the members' mean, and its spread across them, from their raw outputs.

A run with ``train.ensemble_size=K`` trains K members that differ only by seed. Its answers are
the members' mean in the task's own terms — the probability of each label (``bce_with_logits``), of
each class (``cross_entropy``), or the value in the targets' units (``mse``) — with its **spread**:
the standard deviation across the members of the answer each one gives (population, over the K
members: its square is Chemprop's ``ensemble`` variance). For a class, the spread is that of the
probability the members give the class the ensemble predicts. Members with a variance head
(``gaussian_nll``, ``evidential``: each answers a mean and a variance) combine into the mean of
their means and the **total variance**, the mean of their variances plus the variance of their
means (the law of total variance; Chemprop's ensemble of mean-variance models); their spread is
that of their means.

The mean goes back into the form a single model's outputs have — the logit of the mean
probability, the log of the mean class probabilities (whose softmax is that mean), the mean value,
the mean and total variance — so metrics, reports and every task's predictor read an ensemble as
they read one model: computed in log space, so a confident member never makes it infinite.

A regression ensemble **answers a variance**: :func:`answer` puts plain members' spread squared
beside their mean, in a variance head's layout (``(N, 2)``, ``(N, T, 2)``; read by the loss
:func:`~ddpx.contract.outputs.ensemble_answer_loss` names), so the calibration (z-scaling, the
conformal scores divided by the standard deviation), the held-out uncertainty metrics and
``ddpx predict`` treat it exactly as a variance head's.

:class:`EnsembleModel` is the ensemble as one ``torch.nn.Module`` (the exported model's form): its
forward is that answer; while :meth:`EnsembleModel.recording_spread` is open it also keeps each
call's spread, in call order, for the table predictor to add beside the answers. A task's
``TablePredictor`` is handed it like any model; the spread is paired with the rows it answered, so
it calls the model once on each of them, in the table's order (every built-in task's does).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

from ddpx.contract.errors import PluginError
from ddpx.contract.outputs import has_variance
from ddpx.records.ensemble_columns import COMBINED


def combine(outputs: torch.Tensor, loss: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mean, spread)`` of the members' ``outputs`` (stacked: ``(K, N, ...)``), in float64: the
    mean in the outputs' own form, the spread per answer (``(N,)`` or ``(N, T)``; ``(N,)`` for
    classes)."""
    values = outputs.double()
    if loss == "mse":
        return values.mean(0), values.std(0, correction=0)
    if has_variance(loss):
        return total_variance(values), values[..., 0].std(0, correction=0)
    if loss == "bce_with_logits":
        positive = torch.logsumexp(torch.nn.functional.logsigmoid(values), 0)
        negative = torch.logsumexp(torch.nn.functional.logsigmoid(-values), 0)
        return positive - negative, torch.sigmoid(values).std(0, correction=0)
    if loss == "cross_entropy":
        log_mean = torch.logsumexp(torch.log_softmax(values, -1), 0) - math.log(values.shape[0])
        chosen = log_mean.argmax(-1).view(1, -1, 1).expand(values.shape[0], -1, 1)
        return log_mean, torch.softmax(values, -1).gather(-1, chosen).squeeze(-1).std(0, correction=0)
    raise unknown_loss(loss)


def total_variance(values: torch.Tensor) -> torch.Tensor:
    """Members' ``(mean, variance)`` outputs (``(K, ..., 2)``) as one: the mean of their means, and
    the mean of their variances plus the variance of their means (over the K members)."""
    means, variances = values[..., 0], values[..., 1]
    return torch.stack([means.mean(0), variances.mean(0) + means.var(0, correction=0)], -1)


def answer(mean: torch.Tensor, spread: torch.Tensor, loss: str) -> torch.Tensor:
    """What the ensemble answers, from :func:`combine`'s ``mean`` and ``spread``: for plain
    regression members (``mse``) the mean and the spread squared, the variance head's layout;
    any other ensemble's mean as it is."""
    return torch.stack([mean, spread * spread], -1) if loss == "mse" else mean


def unknown_loss(loss: str) -> PluginError:
    return PluginError(f"an ensemble combines the outputs of the losses {', '.join(COMBINED)}, not '{loss}'.")


def as_columns(spread: torch.Tensor) -> torch.Tensor:
    """``(N, T)`` of a spread ``(N,)``, ``(N, 1)`` or ``(N, T)``."""
    return spread.reshape(spread.shape[0], -1)


class EnsembleModel(torch.nn.Module):
    """The members as one model: its output is their answer (:func:`answer`), in their dtype."""

    def __init__(self, members: Sequence[torch.nn.Module], loss: str):
        super().__init__()
        if loss not in COMBINED:
            raise unknown_loss(loss)
        self.members = torch.nn.ModuleList(members)
        self.loss = loss
        self._spreads: list[torch.Tensor] | None = None

    def forward(self, *args, **kwargs) -> torch.Tensor:
        outputs = torch.stack([member(*args, **kwargs) for member in self.members])
        mean, spread = combine(outputs, self.loss)
        if self._spreads is not None:
            self._spreads.append(spread.detach().float().cpu())
        return answer(mean, spread, self.loss).to(outputs.dtype)

    @contextmanager
    def recording_spread(self) -> Iterator[list[torch.Tensor]]:
        """Each forward's spread, in call order, while open."""
        self._spreads = []
        try:
            yield self._spreads
        finally:
            self._spreads = None
