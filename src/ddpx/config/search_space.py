"""Search spaces in the override syntax (and the pruner a search names): ``KEY=loguniform(1e-4,1e-1)``, ``KEY=uniform(0,0.5)``,
``KEY=int(1,4)``, ``KEY=logint(16,256)``, ``KEY=choice(lstm,gru)``.

Each becomes an Optuna distribution (Optuna samples from it; nothing of that is written here).
A malformed space is a :class:`~ddpx.contract.errors.UserError` naming the fix, before anything
starts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from ddpx.config.values import parse_override
from ddpx.contract.errors import UserError

EXPRESSION = re.compile(r"^\s*([A-Za-z_]\w*)\((.*)\)\s*$", re.DOTALL)
USAGE = "uniform(LOW,HIGH), loguniform(LOW,HIGH), int(LOW,HIGH), logint(LOW,HIGH) or choice(A,B,...)"


def is_space(value: str) -> bool:
    """Whether an override's value is a search-space expression (``name(...)``)."""
    return EXPRESSION.match(value) is not None


def parse_space(key: str, value: str) -> Any:
    """The Optuna distribution that ``KEY=VALUE`` describes."""
    name, inner = EXPRESSION.match(value).groups()
    builder = BUILDERS.get(name)
    if builder is None:
        raise UserError(f"unknown distribution '{name}' in {key}={value}. Use {USAGE}.")
    arguments = [a.strip() for a in inner.split(",")]
    if any(not a for a in arguments):
        raise UserError(f"{key}={value} has an empty argument. Write {USAGE}.")
    return builder(key, value, arguments)


def _bounds(key: str, value: str, arguments: list[str], kind: Callable[[str], float]) -> tuple[float, float]:
    if len(arguments) != 2:
        raise UserError(f"{key}={value} needs two bounds, LOW and HIGH (it has {len(arguments)}).")
    try:
        low, high = (kind(a) for a in arguments)
    except ValueError:
        what = "whole numbers" if kind is int else "numbers"
        raise UserError(f"the bounds of {key}={value} must be {what}.") from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise UserError(f"the bounds of {key}={value} must be finite.")
    if low > high:
        raise UserError(
            f"{key}={value}: LOW ({arguments[0]}) is above HIGH ({arguments[1]}); write "
            f"{value.split('(')[0]}({arguments[1]},{arguments[0]})."
        )
    return low, high


def _positive(key: str, value: str, low: float) -> None:
    if low <= 0:
        raise UserError(
            f"{key}={value}: a log scale needs LOW above 0 (log of {low} is undefined); use a small "
            "positive LOW such as 1e-5, or uniform(...) for a linear scale."
        )


def _numeric(kind: type, log: bool) -> Callable[[str, str, list[str]], Any]:
    """A builder of a float (``kind=float``) or integer distribution, on a log scale or not."""

    def build(key: str, value: str, arguments: list[str]) -> Any:
        from optuna.distributions import FloatDistribution, IntDistribution

        low, high = _bounds(key, value, arguments, kind)
        if log:
            _positive(key, value, low)
        return (IntDistribution if kind is int else FloatDistribution)(low, high, log=log)

    return build


def _choice(key, value, arguments):
    from optuna.distributions import CategoricalDistribution

    if len(set(arguments)) < 2:
        raise UserError(f"{key}={value} needs at least two different choices: choice(A,B).")
    return CategoricalDistribution(choices(arguments))


def choices(texts: list[str]) -> list[int | float | str]:
    """The distinct choices, as numbers where they are numbers (so Optuna can rank them)."""
    typed: list[int | float | str] = []
    for text in dict.fromkeys(texts):
        for kind in (int, float):
            try:
                typed.append(kind(text))
                break
            except ValueError:
                continue
        else:
            typed.append(text)
    return typed


BUILDERS = {
    "uniform": _numeric(float, log=False),
    "loguniform": _numeric(float, log=True),
    "int": _numeric(int, log=False),
    "logint": _numeric(int, log=True),
    "choice": _choice,
}


def pruner_warmup(asked: int | None, max_epochs: int) -> int:
    """Epochs a trial runs before it may be pruned: ``--pruner-warmup``, else a fifth of the
    recipe's epochs (0 below 5 epochs): a curve's first epochs, a learning-rate warm-up's above
    all, say little about where it ends."""
    return asked if asked is not None else max_epochs // 5


def build_pruner(name: str, max_epochs: int, warmup: int = 0):
    """``median``: stop a trial behind the median of the finished trials at an epoch, once two
    have finished and the trial has run ``warmup`` epochs; ``hyperband``: Optuna's Hyperband over
    the recipe's epochs, from ``warmup`` (at least 1) on; ``none``."""
    import optuna

    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=warmup)
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=max(1, warmup), max_resource=max(1, max_epochs))
    return optuna.pruners.NopPruner()


def parse_space_arguments(arguments: tuple[str, ...] | list[str]) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """Split ``KEY=space`` (and ``KEY=A,B``, a choice) from ``KEY=VALUE`` (fixed) arguments."""
    from optuna.distributions import CategoricalDistribution

    space, texts, fixed = {}, {}, []
    for text in arguments:
        key, value = parse_override(text)
        if key in space:
            raise UserError(f"'{key}' is searched twice; give its space once.")
        if is_space(value):
            space[key], texts[key] = parse_space(key, value), value
        elif "," in value:
            listed = [v.strip() for v in value.split(",")]
            space[key], texts[key] = (
                CategoricalDistribution(choices(listed)),
                f"choice({','.join(dict.fromkeys(listed))})",
            )
        else:
            fixed.append(text)
    if not space:
        raise UserError(
            "a search needs a space: write KEY=loguniform(LOW,HIGH), KEY=int(LOW,HIGH) or "
            "KEY=choice(A,B), for example `ddpx sweep mlp_synthetic 'train.lr=loguniform(0.01,0.3)' "
            "--search optuna --trials 8`."
        )
    return space, texts, fixed


def corners(space: dict[str, Any]) -> list[dict[str, str]]:
    """Values that touch every bound and every choice of the space (to check before anything starts)."""
    from optuna.distributions import CategoricalDistribution

    options = {
        k: ([str(c) for c in d.choices] if isinstance(d, CategoricalDistribution) else [str(d.low), str(d.high)])
        for k, d in space.items()
    }
    return [{k: v[min(i, len(v) - 1)] for k, v in options.items()} for i in range(max(map(len, options.values())))]
