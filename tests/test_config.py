"""Recipe keys: typed overrides, limits, flattening."""

import pytest

from ddpx.config.values import coerce, flatten, parse_override, unflatten
from ddpx.contract.errors import UserError
from ddpx.contract.specs import Param


def test_flatten_and_unflatten_are_inverse():
    nested = {"name": "x", "train": {"lr": 0.1, "seed": 3}, "model": {"name": "mlp"}}
    flat = flatten(nested)
    assert flat == {"name": "x", "train.lr": 0.1, "train.seed": 3, "model.name": "mlp"}
    assert unflatten(flat) == nested


@pytest.mark.parametrize(
    "text, param, expected",
    [
        ("0.05", Param(0.1), 0.05),
        ("3", Param(0.1), 3.0),
        ("7", Param(1), 7),
        ("true", Param(False), True),
        ("off", Param(True), False),
        ("adamw", Param("sgd", choices=("sgd", "adam", "adamw")), "adamw"),
    ],
)
def test_text_values_take_the_type_of_the_default(text, param, expected):
    value = coerce("k", text, param, from_text=True)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    "text, param, fragment",
    [
        ("fast", Param(0.1), "must be a number"),
        ("1.5", Param(1), "must be an integer"),
        ("maybe", Param(True), "must be true or false"),
        ("0", Param(1, minimum=1), "at least 1"),
        ("0", Param(0.1, above=0), "greater than 0"),
        ("-1e-3", Param(0.1, above=0), "greater than 0"),
        ("adamm", Param("sgd", choices=("sgd", "adam", "adamw")), "Did you mean 'adam'"),
    ],
)
def test_bad_values_are_clear_errors(text, param, fragment):
    with pytest.raises(UserError, match=fragment):
        coerce("k", text, param, from_text=True)


def test_file_values_are_type_checked_too():
    assert coerce("k", 2, Param(0.5), from_text=False) == 2.0
    with pytest.raises(UserError, match="must be an integer"):
        coerce("k", True, Param(1), from_text=False)
    with pytest.raises(UserError, match="must be text"):
        coerce("k", 3, Param("sgd"), from_text=False)


@pytest.mark.parametrize("text", ["train.lr", "=3", "lr 3"])
def test_override_needs_key_and_value(text):
    with pytest.raises(UserError, match="KEY=VALUE"):
        parse_override(text)


def test_override_value_may_contain_equals():
    assert parse_override("dataset.path=a=b.csv") == ("dataset.path", "a=b.csv")
