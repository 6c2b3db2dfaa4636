"""Built-in optimizers (``train.optimizer``) and learning-rate schedules (``train.lr_schedule``).

Optimizers: ``sgd`` (with ``train.momentum``), ``adam``, ``adamw``; each takes ``train.lr`` and
``train.weight_decay``. Schedules, stepped after every optimizer step over the whole run:
``none`` (constant), ``cosine`` (annealed to 0), ``onecycle`` (warm up to ``train.lr``, then
anneal).
"""

from __future__ import annotations

from ddpx.api import OptimizerSpec, ScheduleSpec, hookimpl


def _sgd(parameters, train):
    import torch

    return torch.optim.SGD(parameters, lr=train["lr"], momentum=train["momentum"], weight_decay=train["weight_decay"])


def _adam(parameters, train):
    import torch

    return torch.optim.Adam(parameters, lr=train["lr"], weight_decay=train["weight_decay"])


def _adamw(parameters, train):
    import torch

    return torch.optim.AdamW(parameters, lr=train["lr"], weight_decay=train["weight_decay"])


def _constant(optimizer, train, total_steps):
    return None


def _cosine(optimizer, train, total_steps):
    import torch

    return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)


def _onecycle(optimizer, train, total_steps):
    import torch

    return torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=train["lr"], total_steps=total_steps)


@hookimpl
def register_optimizers(register):
    register(OptimizerSpec("sgd", "stochastic gradient descent, with train.momentum", _sgd))
    register(OptimizerSpec("adam", "Adam", _adam))
    register(OptimizerSpec("adamw", "AdamW (decoupled weight decay)", _adamw))


@hookimpl
def register_schedules(register):
    register(ScheduleSpec("none", "a constant learning rate", _constant))
    register(ScheduleSpec("cosine", "cosine annealing from train.lr to 0 over the run", _cosine))
    register(ScheduleSpec("onecycle", "one cycle: warm up to train.lr, then anneal", _onecycle))
