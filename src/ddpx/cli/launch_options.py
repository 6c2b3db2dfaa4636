"""The options ``ddpx recipe`` and ``ddpx sweep`` share, built from the one record of launch
settings (:class:`~ddpx.contract.launch_settings.LaunchSettings`), plus every launcher's own options,
which launcher plugins declare (:class:`~ddpx.contract.specs.LaunchOption`) and this module adds
when the command is parsed or its help shown.
"""

from __future__ import annotations

from dataclasses import Field, fields
from typing import Any

import click

from ddpx.cli.app import registry_with_warnings
from ddpx.contract.errors import UserError
from ddpx.contract.launch_settings import LaunchSettings, parse_node_range
from ddpx.contract.specs import LaunchOption
from ddpx.plugin_host.registry import Registry

LAUNCHER_OPTION_PREFIX = "launcher_option_"


def _setting_option(setting: Field) -> click.Option:
    meta = setting.metadata
    flag = meta.get("flag") or "--" + setting.name.replace("_", "-")
    kind = meta.get("kind") or (type(setting.default) if setting.default is not None else str)
    return click.Option(
        [flag, setting.name],
        type=None if kind is bool else kind,
        default=setting.default,
        show_default=setting.default is not None,
        help=meta["help"],
        envvar=meta.get("envvar"),
        metavar=meta.get("metavar"),
    )


def setting_options(command: str) -> list[click.Option]:
    """The options for every launch setting the command takes."""
    return [
        _setting_option(setting)
        for setting in fields(LaunchSettings)
        if "help" in setting.metadata and setting.metadata.get("only", command) == command
    ]


def _launcher_option(option: LaunchOption) -> click.Option:
    dest = LAUNCHER_OPTION_PREFIX + option.key
    if option.flag:
        return click.Option([f"--{option.name}", dest], is_flag=True, default=False, help=option.help)
    return click.Option(
        [f"--{option.name}", dest],
        type=option.kind,
        multiple=option.multiple,
        help=option.help,
        default=() if option.multiple else option.default,
        metavar=option.metavar,
    )


def launcher_options(registry: Registry) -> dict[str, tuple[LaunchOption, list[str]]]:
    """Every launcher's options by name, with the launchers that declare each."""
    found: dict[str, tuple[LaunchOption, list[str]]] = {}
    for launcher in registry.all("launchers").values():
        for option in launcher.options:
            found.setdefault(option.name, (option, []))[1].append(launcher.name)
    return found


class LaunchCommand(click.Command):
    """A command with the launch settings' options and, once parsed or helped, every launcher's."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.params.extend(setting_options(self.name))
        self._launchers_added = False

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if not self._launchers_added:
            self._launchers_added = True
            taken = {opt for param in self.params for opt in getattr(param, "opts", [])}
            for option, _ in launcher_options(registry_with_warnings()).values():
                if f"--{option.name}" not in taken:
                    self.params.append(_launcher_option(option))
        return super().get_params(ctx)


def settings_from(registry: Registry, values: dict[str, Any]) -> LaunchSettings:
    """The launch settings the user gave; a launcher's option given with another launcher is an error."""
    settings = LaunchSettings(**{s.name: values[s.name] for s in fields(LaunchSettings) if s.name in values})
    settings.min_nodes, settings.nnodes = parse_node_range(settings.nnodes)
    launcher = registry.get("launchers", settings.launcher, key="--launcher")
    for name, (option, owners) in launcher_options(registry).items():
        dest = LAUNCHER_OPTION_PREFIX + option.key
        if dest not in values:
            continue
        value = values[dest]
        if any(own.name == name for own in launcher.options):
            settings.launcher_options[option.key] = list(value) if option.multiple else value
        elif value not in (None, False, ()) and value != option.default:
            raise UserError(
                f"--{name} is an option of --launcher {' or '.join(owners)}, not of --launcher "
                f"{launcher.name}. Add --launcher {owners[0]}, or leave --{name} out."
            )
    return settings
