"""Built-in optimizers (``train.optimizer``) and learning-rate schedules (``train.lr_schedule``).

Optimizers: ``sgd`` (with ``train.momentum``), ``adam``, ``adamw``; each takes ``train.lr`` and
``train.weight_decay``. Schedules, stepped after every optimizer step over the whole run (after
the warm-up ``train.warmup_steps`` / ``train.warmup_fraction``, which the core runs for any
schedule): ``constant``, ``step`` (times ``train.lr_decay_factor`` every
``train.lr_decay_every`` epochs), ``cosine`` (annealed to 0), ``onecycle`` (its own warm-up to
``train.lr``, then anneal), ``noam`` (Chemprop's: its own linear warm-up from
``train.noam_init_lr_ratio`` × ``train.lr`` to ``train.lr`` over ``train.noam_warmup_epochs`` epochs, then
exponential decay to ``train.noam_final_lr_ratio`` × ``train.lr`` at the last step).
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


def noam_factor(warmup_steps: int, cooldown_steps: int, init_ratio: float, final_ratio: float):
    """The noam schedule's learning rate at each step as a fraction of the peak (``train.lr``),
    computed as Chemprop's ``build_NoamLike_LRSched`` computes it: linear from ``init_ratio`` to 1
    over ``warmup_steps``, then times ``final_ratio ** (1 / cooldown_steps)`` each step, then
    ``final_ratio``."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return init_ratio + step * (1 - init_ratio) / warmup_steps
        if step < warmup_steps + cooldown_steps:
            return (final_ratio ** (1 / cooldown_steps)) ** (step - warmup_steps)
        return final_ratio

    return factor


def _noam(optimizer, train, total_steps):
    import torch

    warmup = train["noam_warmup_epochs"] * train["steps_per_epoch"]
    factor = noam_factor(warmup, total_steps - warmup, train["noam_init_lr_ratio"], train["noam_final_lr_ratio"])
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _check_noam(train):
    if train["warmup_steps"] or train["warmup_fraction"]:
        raise UserError(
            "train.lr_schedule=noam warms up by itself (over train.noam_warmup_epochs epochs, from "
            "train.noam_init_lr_ratio × train.lr), so train.warmup_steps and train.warmup_fraction must "
            "stay 0 with it. Drop the warm-up keys, or set train.noam_warmup_epochs."
        )


def _check_onecycle(train):
    if train["warmup_steps"] or train["warmup_fraction"]:
        raise UserError(
            "train.lr_schedule=onecycle warms up by itself (over the first 30 % of the run), so "
            "train.warmup_steps and train.warmup_fraction must stay 0 with it. Drop the warm-up keys, "
            "or use train.lr_schedule=cosine with the warm-up."
        )


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
    register(ScheduleSpec("onecycle", "one cycle: warm up to train.lr, then anneal", _onecycle, check=_check_onecycle))
    register(
        ScheduleSpec(
            "noam",
            "Chemprop's: linear warm-up over train.noam_warmup_epochs, then exponential decay "
            "to train.noam_final_lr_ratio × train.lr",
            _noam,
            check=_check_noam,
        )
    )
