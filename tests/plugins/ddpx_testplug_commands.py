"""A third-party plugin adding a command to ``ddpx`` (the ``register_commands`` hook), a second
that clashes with a built-in command, and a kind of model ``ddpx predict`` loads through it
(``ddpx_load_predictor``): ``constant:VALUE`` answers VALUE for every row."""

import os

import click

from ddpx.api import UserError, hookimpl


@click.command("greet")
@click.argument("name")
@click.option("--shout", is_flag=True, help="Greet in capitals.")
def greet_command(name: str, shout: bool) -> None:
    """Greet NAME (a command a test plugin adds)."""
    if name == "nobody":
        raise UserError("there is nobody to greet: give a name.")
    text = f"hello, {name}"
    click.echo(text.upper() if shout else text)


@click.command("recipes")
def clashing_command() -> None:
    """A command whose name ddpx has: left out with a warning."""


@hookimpl
def register_commands(register):
    register(greet_command)
    if os.environ.get("DDPX_TESTPLUG_CLASH"):
        register(clashing_command)


@hookimpl
def ddpx_load_predictor(model, tracking_uri):
    if not model.startswith("constant:"):
        return None
    value = float(model.partition(":")[2])
    return lambda table: table.assign(prediction=value)
