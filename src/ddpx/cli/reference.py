"""The whole ``ddpx`` command line for the docs' command reference (``docs/reference/cli.md``):
mkdocs-click reads a group's ``commands``, and the ``ddpx`` group finds its plugins' commands only
when they are listed or asked for, so this copy holds them all, the installed plugins' included."""

from __future__ import annotations

from ddpx.cli import cli

every_command = cli.with_plugin_commands()

__all__ = ["every_command"]
