"""The ``ddpx`` command group: its error handling, its plugins' commands, and the helpers every
command shares.

Heavy libraries (torch, mlflow) are imported only inside the commands that need them, so
``--help``, ``ddpx recipes`` and ``ddpx show`` stay fast. Plugins add commands through the
``register_commands`` hook; they are loaded only when the commands are listed (``--help``) or a
command the core does not have is asked for, never for a built-in command. A user mistake is one ``Error:``
paragraph and exit code 2; a job that fails is its first rank's error, shown once, and exit 1; a
full disk met anywhere is the paragraph naming it, and exit 1.
"""

from __future__ import annotations

import copy

import click

from ddpx import __version__
from ddpx.contract.errors import JobFailed, PluginError, UserError
from ddpx.contract.terminal import console


class DdpxGroup(click.Group):
    """Turns ddpx's own errors into one clear message and the right exit code; lists and finds
    the plugins' commands beside its own (``self.commands``)."""

    def plugin_commands(self, ctx: click.Context) -> dict[str, click.Command]:
        """The commands plugins register, once per invocation; a clash is a warning, not a crash."""
        meta = ctx.find_root().meta
        if "ddpx.commands" not in meta:
            meta["ddpx.commands"] = {}
            try:
                commands = registry_with_warnings(ctx).all("commands")
            except PluginError as exc:
                click.echo(f"Warning: {exc.message} Its commands are left out.", err=True)
                return {}
            for name, command in commands.items():
                if name in self.commands:
                    owner = registry_with_warnings(ctx).owner("commands", name)
                    click.echo(
                        f"Warning: plugin '{owner}' registers the command '{name}', which ddpx has: "
                        f"it is left out. Rename it, or skip the plugin with DDPX_DISABLE_PLUGINS={owner}.",
                        err=True,
                    )
                else:
                    meta["ddpx.commands"][name] = command
        return meta["ddpx.commands"]

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.plugin_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        return self.plugin_commands(ctx).get(cmd_name)

    def with_plugin_commands(self) -> click.Group:
        """A copy of this group whose ``commands`` hold the plugins' too: for readers of
        ``commands`` (the docs' command reference, mkdocs-click)."""
        ctx = click.Context(self, info_name="ddpx")
        group = copy.copy(self)
        group.commands = {name: self.get_command(ctx, name) for name in self.list_commands(ctx)}
        return group

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as exc:
            click.echo(f"Error: {exc.message}", err=True)
            ctx.exit(exc.exit_code)
        except JobFailed as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(exc.exit_code)
        except Exception as exc:  # a full disk anywhere else is named too, never a traceback
            from ddpx.contract.disk_full import disk_full_error

            full = disk_full_error(exc, None)
            if full is None:
                raise
            click.echo(f"Error: {full.message}", err=True)
            ctx.exit(1)


def registry_with_warnings(ctx: click.Context | None = None):
    """The plugins' registry, loaded once per command (a plugin that fails to load is a warning)."""
    from ddpx.plugin_host.registry import load_registry

    ctx = ctx or click.get_current_context(silent=True)
    meta = ctx.find_root().meta if ctx is not None else {}
    if "ddpx.registry" not in meta:
        registry = meta["ddpx.registry"] = load_registry()
        for error in registry.pm.load_errors:
            click.echo(f"Warning: {error.message}", err=True)
    return meta["ddpx.registry"]


@click.group(cls=DdpxGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="ddpx")
def cli() -> None:
    """ddpx: plugin-based experiments with PyTorch DistributedDataParallel.

    \b
    Quick start:
      ddpx recipes                 list the recipes
      ddpx recipe mlp_synthetic    train one on 2 CPU ranks (or every GPU)
      ddpx sweep mlp_synthetic train.lr=0.03,0.1
                                   train a grid of variants, one MLflow parent run
      ddpx runs                    a table of runs and their held-out metrics
      mlflow ui                    compare runs in the browser
    """


__all__ = ["DdpxGroup", "cli", "console", "registry_with_warnings"]  # console: where every command prints
