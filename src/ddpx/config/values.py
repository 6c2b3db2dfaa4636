"""Recipe values: dotted keys, typed ``KEY=VALUE`` overrides, and their validation.

A resolved recipe is a nested mapping (``{"train": {"lr": 0.1}}``); its keys are written dotted
(``train.lr``). Every key has a :class:`~ddpx.contract.specs.Param` whose default fixes the
type, so ``train.lr=0.05`` on the command line becomes a float and ``train.lr=fast`` is an
error before anything starts. A key whose default is a list takes a list of text, written as in
TOML: ``dataset.label_columns=["FDA_APPROVED", "CT_TOX"]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ddpx.contract.errors import UserError, did_you_mean
from ddpx.contract.records import Param

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
    names = {bool: "true or false", int: "an integer", float: "a number", str: "text", list: "a list of text"}
    return names.get(type(value), type(value).__name__)


def coerce(key: str, value: Any, param: Param, *, from_text: bool) -> Any:
    """Convert ``value`` to the type of ``param.default`` and check its limits."""
    expected = type(param.default)
    try:
        if from_text:
            value = _from_text(value, expected)
        value = _check_type(value, expected)
    except ValueError:
        raise UserError(
            f"'{key}' must be {_type_name(param.default)}, not {value!r}. For example: {key}={_example(param.default)}."
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
    if expected is list:
        import tomllib

        try:
            return tomllib.loads(f"value = {text}")["value"]
        except tomllib.TOMLDecodeError:
            raise ValueError(text) from None
    return text


def _check_type(value: Any, expected: type) -> Any:
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is int and isinstance(value, bool):
        raise ValueError(value)
    if not isinstance(value, expected) or (expected is list and not all(isinstance(v, str) for v in value)):
        raise ValueError(value)
    return value


def _example(default: Any) -> str:
    if isinstance(default, bool):
        return "true"
    if isinstance(default, list):
        return '["a", "b"]'
    return str(default) if default != "" else "VALUE"


MAX_TEXT = 4096
INT64 = 2**63


def _check_general(key: str, value: Any) -> None:
    """The rules every key gets, whatever its Param declares."""
    if isinstance(value, list):
        for item in value:
            _check_general(key, item)
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(f"'{key}' must be a finite number, not {value!r}.")
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise UserError(f"'{key}' is {len(value)} characters long; at most {MAX_TEXT} are allowed.")
        bad = next((c for c in value if ord(c) < 32 or ord(c) == 127), None)
        if bad is not None:
            raise UserError(f"'{key}' contains the control character {bad!r}; remove it.")


def _check_url(key: str, value: str, schemes: tuple[str, ...]) -> None:
    from urllib.parse import urlsplit

    if value and (urlsplit(value).scheme.lower() not in schemes or not urlsplit(value).netloc):
        allowed = " or ".join(f"{s}://" for s in schemes)
        raise UserError(
            f"'{key}' must be a {allowed} address, not {value!r}. To use a file you already have, "
            "point the dataset's path key at it instead."
        )


def _check_limits(key: str, value: Any, param: Param) -> None:
    _check_general(key, value)
    if param.schemes is not None and isinstance(value, str):
        _check_url(key, value, param.schemes)
    if param.choices is not None and value not in param.choices:
        options = ", ".join(str(c) for c in param.choices)
        raise UserError(
            f"'{key}' must be one of {options}, not {value!r}.{did_you_mean(str(value), map(str, param.choices))}"
        )
    if param.minimum is not None and value < param.minimum:
        raise UserError(f"'{key}' must be at least {param.minimum}, not {value!r}.")
    if param.above is not None and value <= param.above:
        raise UserError(f"'{key}' must be greater than {param.above}, not {value!r}.")
    if param.maximum is not None and value > param.maximum:
        raise UserError(f"'{key}' must be at most {param.maximum}, not {value!r}.")
    if param.below is not None and value >= param.below:
        raise UserError(f"'{key}' must be less than {param.below}, not {value!r}.")
    if isinstance(value, int) and not isinstance(value, bool) and not -INT64 <= value < INT64:
        raise UserError(f"'{key}' is out of range: {value} does not fit in 64 bits.")


def unknown_key_error(key: str, schema: Mapping[str, Param], where: str) -> UserError:
    """The error for a key no plugin declares, with the closest known key."""
    section = key.split(".", 1)[0]
    same_section = [k for k in schema if k.split(".", 1)[0] == section] or list(schema)
    return UserError(
        f"unknown recipe key '{key}'{where}.{did_you_mean(key, same_section) or did_you_mean(key, schema)} "
        "`ddpx show RECIPE` lists every key with its value."
    )
