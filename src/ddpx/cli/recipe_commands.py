"""``ddpx recipes``, ``ddpx show`` and ``ddpx cp``: list, inspect and copy recipes."""

from __future__ import annotations

import json

import click

from ddpx.cli.app import cli, console, registry_with_warnings
from ddpx.contract.errors import UserError

WIDE_TABLE = 110  # columns from which `ddpx recipes` shows every column


@cli.command("recipes")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def recipes_command(as_json: bool) -> None:
    """List the recipes every installed plugin provides."""
    from dataclasses import asdict

    from ddpx.config.listing import list_recipes

    rows = list_recipes(registry_with_warnings())
    if as_json:
        click.echo(json.dumps([asdict(r) for r in rows], indent=2))
        return
    from rich.table import Table

    out = console()
    # a narrow terminal keeps the description readable: task and model are in `ddpx show` and --json
    columns = ("name", "task", "model", "metric") if out.width >= WIDE_TABLE else ("name", "metric")
    table = Table(title="ddpx recipes", title_justify="left")
    for column in columns:
        table.add_column(column, no_wrap=True)
    table.add_column("description", overflow="fold")
    for row in rows:
        table.add_row(*(getattr(row, column) for column in columns), row.description)
    out.print(table)
    click.echo("Run one with `ddpx recipe NAME`; see its keys with `ddpx show NAME`.")
    presets = [row.name for row in list_recipes(registry_with_warnings(), presets=True)]
    if presets:
        # wrapped at whole words (a pipe gets one long line)
        out.print(
            f'Presets, bases for your own recipes (`extends = "NAME"` in a .toml file): {", ".join(presets)}.',
            highlight=False,
            markup=False,
        )


@cli.command("show")
@click.argument("name")
@click.argument("overrides", nargs=-1, metavar="[KEY=VALUE]...")
def show_command(name: str, overrides: tuple[str, ...]) -> None:
    """Print recipe NAME fully resolved (defaults, file, overrides) as TOML."""
    from ddpx.config.recipe import resolve_recipe

    recipe = resolve_recipe(registry_with_warnings(), name, overrides)
    click.echo(f"# recipe {recipe.name} from {recipe.source}")
    click.echo(recipe.to_toml(), nl=False)


@cli.command("cp")
@click.argument("name")
@click.argument("dest", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Overwrite DEST if it exists.")
def cp_command(name: str, dest: str, force: bool) -> None:
    """Copy recipe NAME to DEST (a .toml file) to edit it; run it with `ddpx recipe DEST`."""
    import shutil
    from pathlib import Path

    from ddpx.config.recipe_files import find_recipe

    source = find_recipe(registry_with_warnings(), name)
    target = Path(dest)
    if target.suffix != ".toml":
        raise UserError(f"'{dest}' should end in .toml, so that `ddpx recipe {dest}` reads it as a recipe file.")
    if target.exists() and not force:
        raise UserError(f"'{dest}' already exists; choose another name or add --force to overwrite it.")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    click.echo(f"copied {source.name} to {target}; edit it, then run `ddpx recipe {target}`")
