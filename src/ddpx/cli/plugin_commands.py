"""``ddpx plugins``: what every installed plugin provides; ``ddpx plugins check NAME``."""

from __future__ import annotations

import json

import click

from ddpx.cli.app import cli, console, registry_with_warnings

WIDE_TABLE = 120  # columns from which `ddpx plugins` shows each plugin's hooks and version


@cli.group("plugins", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def plugins_command(ctx: click.Context, as_json: bool) -> None:
    """List every plugin: distribution, version, hooks, and what it registers.

    `ddpx plugins check NAME` checks that an installed plugin conforms to the contract.
    """
    if ctx.invoked_subcommand is not None:
        return
    from ddpx.cli.plugin_report import plugin_report

    registry = registry_with_warnings()
    report = plugin_report(registry)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    print_plugins_table(report["plugins"])
    for error in report["errors"]:
        click.echo(f"not loaded: {error['message']}")


def print_plugins_table(plugins: list[dict]) -> None:
    """One row per plugin, its words never cut: in a terminal under ``WIDE_TABLE`` columns the
    hooks and the version (in ``--json``) make room for what each plugin registers."""
    from rich.table import Table

    out = console()
    wide = out.width >= WIDE_TABLE
    table = Table(title="ddpx plugins", title_justify="left")
    for column in ("name", "distribution", "version", "hooks") if wide else ("name", "distribution"):
        table.add_column(column, overflow="fold")  # a word longer than its column is folded, never cut off
    table.add_column("registers", overflow="fold")
    for plugin in plugins:
        cells = [plugin["name"], plugin["distribution"] or "-"]
        if wide:
            cells += [plugin["version"] or "-", ", ".join(plugin["hooks"])]
        registers = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in plugin["registers"].items())
        table.add_row(*cells, registers)
    out.print(table)
    if not wide:
        hint = f"Each plugin's version and hooks: `ddpx plugins --json`, or a terminal {WIDE_TABLE} columns wide."
        out.print(hint, markup=False, highlight=False)  # wrapped at whole words


@plugins_command.command("check")
@click.argument("name")
@click.option("--nproc", type=int, default=2, show_default=True, help="CPU ranks for the short training runs.")
def plugins_check_command(name: str, nproc: int) -> None:
    """Check plugin NAME (a plugin or its distribution): it loads, its hooks match the specs, its
    names clash with no other plugin, and its recipes train and produce their metric on CPU."""
    from ddpx.testing.plugin_check import check_plugin

    checks = check_plugin(registry_with_warnings(), name, nproc)
    for check in checks:
        mark = click.style("PASS", fg="green") if check.passed else click.style("FAIL", fg="red")
        click.echo(f"{mark}  {check.name}: {check.detail}")
    failed = sum(not c.passed for c in checks)
    click.echo(f"{len(checks) - failed} passed, {failed} failed")
    if failed:
        raise SystemExit(1)
