"""The ``ddpx`` command group: its error handling and the helpers every command shares.

Heavy libraries (torch, mlflow) are imported only inside the commands that need them, so
``--help``, ``ddpx recipes`` and ``ddpx show`` stay fast. A user mistake is one ``Error:``
paragraph and exit code 2; a job that fails is its first rank's error, shown once, and exit 1; a
full disk met anywhere is the paragraph naming it, and exit 1.
"""

from __future__ import annotations

import sys

import click

from ddpx import __version__
from ddpx.contract.errors import JobFailed, UserError


class DdpxGroup(click.Group):
    """Turns ddpx's own errors into one clear message and the right exit code."""

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


def console():
    """A terminal's own width; a wide page when the output goes to a file or a pipe."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)


def registry_with_warnings():
    """The plugins' registry, loaded once per command (a plugin that fails to load is a warning)."""
    from ddpx.plugin_host.registry import load_registry

    ctx = click.get_current_context(silent=True)
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
      ddpx recipes                       list the recipes
      ddpx recipe mlp_synthetic          train one on 2 CPU ranks (or every GPU)
      ddpx sweep mlp_synthetic train.lr=0.03,0.1
                                         train a grid of variants, one MLflow parent run
      ddpx runs                          a table of runs and their held-out metrics
      mlflow ui                          compare runs in the browser
    """
