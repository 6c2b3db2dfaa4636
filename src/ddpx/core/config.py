"""Recipe keys: the core's ``train.*`` keys, typed ``KEY=VALUE`` overrides, and validation.

A resolved recipe is a nested mapping (``{"train": {"lr": 0.1}}``); its keys are written dotted
(``train.lr``). Every key has a :class:`~ddpx.core.components.Param` whose default fixes the
type, so ``train.lr=0.05`` on the command line becomes a float and ``train.lr=fast`` is an
error before anything starts.
"""

from __future__ import annotations

from typing import Any, Mapping

from ddpx.core.components import Param
from ddpx.core.errors import UserError
from ddpx.core.suggestions import did_you_mean

TRAIN_PARAMS: dict[str, Param] = {
    "max_epochs": Param(10, "epochs to train at most (0 evaluates the initial model)", minimum=0),
    "batch_size": Param(64, "samples per process per step (the global batch is this times the world size)", minimum=1),
    "eval_batch_size": Param(512, "samples per process per step when evaluating", minimum=1),
    "lr": Param(0.1, "learning rate", above=0),
    "weight_decay": Param(0.0, "weight decay", minimum=0),
    "momentum": Param(0.0, "momentum (sgd only)", minimum=0),
    "optimizer": Param("sgd", "optimizer", choices=("sgd", "adam", "adamw")),
    "seed": Param(0, "seed for data splits, initial weights and shuffling"),
    "patience": Param(3, "stop after this many epochs without dev improvement (0: never stop early)", minimum=0),
    "precision": Param("fp32", "fp32 (or 32), or bf16 / fp16 mixed precision with torch.autocast (fp16 needs a GPU)",
                       choices=("fp32", "32", "bf16", "fp16")),
    "lr_schedule": Param("none", "learning-rate schedule, stepped every step", choices=("none", "cosine", "onecycle")),
    "channels_last": Param(False, "channels-last memory format for 4-D inputs (convnets)"),
    "compile": Param(False, "wrap the DDP model in torch.compile"),
    "sampler": Param("distributed", "training sampler (a registered sampler name)"),
    "wrapper": Param("ddp", "how the model is made data-parallel: ddp, allreduce, dp (a registered wrapper)"),
    "check_sync": Param(False, "after every step, check that all ranks hold the same parameters (slow; debugging)"),
    "num_workers": Param(0, "DataLoader worker processes per rank", minimum=0),
    "stop_check_every": Param(0, "steps between checks for a stop request (SIGUSR1: checkpoint, then stop); "
                              "0: about one check a second, from the measured step time", minimum=0),
    "drop_last": Param(False, "drop each epoch's last incomplete training batch (batch norm needs more than one sample)"),
    "init_from": Param("", "a ddpx checkpoint whose model weights the run starts from"),
}

META_PARAMS: dict[str, Param] = {
    "name": Param("", "the recipe's name"),
    "description": Param("", "one line about the recipe"),
    "task": Param("", "the task (a registered task name)"),
    "model.name": Param("", "the model (a registered model name)"),
}

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def flatten(nested: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"train": {"lr": 0.1}}`` -> ``{"train.lr": 0.1}``."""
    flat: dict[str, Any] = {}
    for key, value in nested.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{dotted}."))
        else:
            flat[dotted] = value
    return flat


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"train.lr": 0.1}`` -> ``{"train": {"lr": 0.1}}``."""
    nested: dict[str, Any] = {}
    for dotted, value in flat.items():
        node = nested
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def parse_override(text: str) -> tuple[str, str]:
    """Split ``KEY=VALUE``; anything else is a usage error."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UserError(
            f"'{text}' is not a recipe override: write KEY=VALUE, for example train.lr=0.05. "
            "`ddpx show RECIPE` lists every key."
        )
    return key, value.strip()


def _type_name(value: Any) -> str:
    return {bool: "true or false", int: "an integer", float: "a number", str: "text"}.get(type(value), type(value).__name__)


def coerce(key: str, value: Any, param: Param, *, from_text: bool) -> Any:
    """Convert ``value`` to the type of ``param.default`` and check its limits."""
    expected = type(param.default)
    try:
        if from_text:
            value = _from_text(value, expected)
        value = _check_type(value, expected)
    except ValueError:
        raise UserError(
            f"'{key}' must be {_type_name(param.default)}, not {value!r}. "
            f"For example: {key}={_example(param.default)}."
        ) from None
    _check_limits(key, value, param)
    return value


def _from_text(text: str, expected: type) -> Any:
    if expected is bool:
        lowered = text.lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError(text)
    if expected is int:
        return int(text)
    if expected is float:
        return float(text)
    return text


def _check_type(value: Any, expected: type) -> Any:
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is int and isinstance(value, bool):
        raise ValueError(value)
    if not isinstance(value, expected):
        raise ValueError(value)
    return value


def _example(default: Any) -> str:
    if isinstance(default, bool):
        return "true"
    return str(default) if default != "" else "VALUE"


def _check_limits(key: str, value: Any, param: Param) -> None:
    if param.choices is not None and value not in param.choices:
        options = ", ".join(str(c) for c in param.choices)
        raise UserError(f"'{key}' must be one of {options}, not {value!r}.{did_you_mean(str(value), map(str, param.choices))}")
    if param.minimum is not None and value < param.minimum:
        raise UserError(f"'{key}' must be at least {param.minimum}, not {value!r}.")
    if param.above is not None and value <= param.above:
        raise UserError(f"'{key}' must be greater than {param.above}, not {value!r}.")


def unknown_key_error(key: str, schema: Mapping[str, Param], where: str) -> UserError:
    """The error for a key no plugin declares, with the closest known key."""
    section = key.split(".", 1)[0]
    same_section = [k for k in schema if k.split(".", 1)[0] == section] or list(schema)
    return UserError(
        f"unknown recipe key '{key}'{where}.{did_you_mean(key, same_section) or did_you_mean(key, schema)} "
        "`ddpx show RECIPE` lists every key with its value."
    )
