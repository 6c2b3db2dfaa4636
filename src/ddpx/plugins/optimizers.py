"""Built-in optimizers (``train.optimizer``) and learning-rate schedules (``train.lr_schedule``).

Optimizers: ``sgd`` (with ``train.momentum``), ``adam``, ``adamw``; each takes ``train.lr`` and
``train.weight_decay``. Schedules, stepped after every optimizer step over the whole run (after
the warm-up ``train.warmup_steps`` / ``train.warmup_fraction``, which the core runs for any
schedule): ``constant``, ``step`` (times ``train.lr_decay_factor`` every
``train.lr_decay_every`` epochs), ``cosine`` (annealed to 0), ``onecycle`` (its own warm-up to
``train.lr``, then anneal).
"""

from __future__ import annotations

from ddpx.api import OptimizerSpec, ScheduleSpec, UserError, hookimpl


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


def _step(optimizer, train, total_steps):
    import torch

    every = train["lr_decay_every"] * train["steps_per_epoch"]
    return torch.optim.lr_scheduler.StepLR(optimizer, step_size=every, gamma=train["lr_decay_factor"])


def _cosine(optimizer, train, total_steps):
    import torch

    return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)


def _onecycle(optimizer, train, total_steps):
    import torch

    return torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=train["lr"], total_steps=total_steps)


def _check_onecycle(train):
    if train["warmup_steps"] or train["warmup_fraction"]:
        raise UserError("train.lr_schedule=onecycle warms up by itself (over the first 30 % of the run), so "
                        "train.warmup_steps and train.warmup_fraction must stay 0 with it. Drop the warm-up keys, "
                        "or use train.lr_schedule=cosine with the warm-up.")


@hookimpl
def register_optimizers(register):
    register(OptimizerSpec("sgd", "stochastic gradient descent, with train.momentum", _sgd))
    register(OptimizerSpec("adam", "Adam", _adam))
    register(OptimizerSpec("adamw", "AdamW (decoupled weight decay)", _adamw))


@hookimpl
def register_schedules(register):
    register(ScheduleSpec("constant", "a constant learning rate (after any warm-up)", _constant))
    register(ScheduleSpec("step", "times train.lr_decay_factor every train.lr_decay_every epochs", _step))
    register(ScheduleSpec("cosine", "cosine annealing from train.lr to 0 over the run", _cosine))
    register(ScheduleSpec("onecycle", "one cycle: warm up to train.lr, then anneal", _onecycle,
                          check=_check_onecycle))
