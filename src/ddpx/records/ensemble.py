"""An ensemble's answer: the members' mean, and its spread across them, from their raw outputs.

A run with ``train.ensemble_size=K`` trains K members that differ only by seed. Its answers are
the members' mean in the task's own terms — the probability of each label (``bce_with_logits``), of
each class (``cross_entropy``), or the value in the targets' units (``mse``) — with its **spread**:
the standard deviation across the members of the answer each one gives (population, over the K
members: its square is Chemprop's ``ensemble`` variance). For a class, the spread is that of the
probability the members give the class the ensemble predicts.

The mean goes back into the form a single model's outputs have — the logit of the mean
probability, the log of the mean class probabilities (whose softmax is that mean), the mean value —
so metrics, reports and every task's predictor read an ensemble as they read one model: computed
in log space, so a confident member never makes it infinite.

:class:`EnsembleModel` is the ensemble as one ``torch.nn.Module`` (the exported model's form): its
forward is that mean; while :meth:`EnsembleModel.recording_spread` is open it also keeps each
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
from ddpx.records.ensemble_columns import COMBINED


def combine(outputs: torch.Tensor, loss: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mean, spread)`` of the members' ``outputs`` (stacked: ``(K, N, ...)``), in float64: the
    mean in the outputs' own form, the spread per answer (``(N,)`` or ``(N, T)``; ``(N,)`` for
    classes)."""
    values = outputs.double()
    if loss == "mse":
        return values.mean(0), values.std(0, correction=0)
    if loss == "bce_with_logits":
        positive = torch.logsumexp(torch.nn.functional.logsigmoid(values), 0)
        negative = torch.logsumexp(torch.nn.functional.logsigmoid(-values), 0)
        return positive - negative, torch.sigmoid(values).std(0, correction=0)
    if loss == "cross_entropy":
        log_mean = torch.logsumexp(torch.log_softmax(values, -1), 0) - math.log(values.shape[0])
        chosen = log_mean.argmax(-1).view(1, -1, 1).expand(values.shape[0], -1, 1)
        return log_mean, torch.softmax(values, -1).gather(-1, chosen).squeeze(-1).std(0, correction=0)
    raise unknown_loss(loss)


def unknown_loss(loss: str) -> PluginError:
    return PluginError(f"an ensemble combines the outputs of the losses {', '.join(COMBINED)}, not '{loss}'.")


def as_columns(spread: torch.Tensor) -> torch.Tensor:
    """``(N, T)`` of a spread ``(N,)``, ``(N, 1)`` or ``(N, T)``."""
    return spread.reshape(spread.shape[0], -1)


class EnsembleModel(torch.nn.Module):
    """The members as one model: its output is their mean (see :func:`combine`), in their dtype."""

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
        return mean.to(outputs.dtype)

    @contextmanager
    def recording_spread(self) -> Iterator[list[torch.Tensor]]:
        """Each forward's spread, in call order, while open."""
        self._spreads = []
        try:
            yield self._spreads
        finally:
            self._spreads = None
