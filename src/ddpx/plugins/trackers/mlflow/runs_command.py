"""``ddpx runs``: which run was best, and why — one table per recipe, best first.

Each table leads with the recipe's held-out metric under its full name (never cut), then the
run, its status and duration, and the params that differ between that recipe's runs. Columns
that do not fit the terminal are left out (the params last first) and named below the table;
piped output is one wide table, never wrapped. The MLflow tracker plugin adds the command to
``ddpx`` (its ``register_commands`` hook).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict

import click

from ddpx.api import console

RUNS_EPILOG = """\b
Examples:
  ddpx runs                              # every recipe's runs, best first
  ddpx runs --recipe bbbp_rnn --limit 5  # the 5 best bbbp_rnn runs
  ddpx runs --sort heldout_loss --ascending
  ddpx runs --tracking-uri http://127.0.0.1:5000 --json
"""


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def metric_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def run_label(name: str, recipe: str) -> str:
    """The run's name without the recipe it starts with (the table's title says it)."""
    return name[len(recipe) + 1 :] if name.startswith(f"{recipe}-") else name


def recipe_columns(group) -> list[tuple[str, list[str]]]:
    """(header, cells) of every column, in the order they are kept when the width runs out:
    the metric, the run, the params that differ, duration, status, sweep role, start."""
    rows = group.rows
    columns = [
        (group.metric, [metric_text(r.score) for r in rows]),
        ("run", [run_label(r.name, group.recipe) for r in rows]),
    ]
    columns += [(key, [r.params.get(key, "") for r in rows]) for key in group.varying]
    columns += [("duration", [duration_text(r.duration_s) for r in rows]), ("status", [r.status for r in rows])]
    if any(r.sweep for r in rows):
        columns.append(("sweep", [r.sweep or "-" for r in rows]))
    columns.append(("started", [time.strftime("%m-%d %H:%M", time.localtime(r.started / 1000)) for r in rows]))
    return columns


def fitting(columns: list[tuple[str, list[str]]], width: int) -> tuple[list, list[str]]:
    """The columns that fit ``width`` (the metric and the run always), and the headers left out."""

    def needed(column) -> int:
        header, cells = column
        return max(len(header), *(len(c) for c in cells)) + 3  # padding and border

    shown, left_out, used = [], [], 1
    for index, column in enumerate(columns):
        if index < 2 or used + needed(column) <= width:
            shown.append(column)
            used += needed(column)
        else:
            left_out.append(column[0])
    return shown, left_out


def print_group(out, group) -> None:
    from rich.table import Table

    shown, left_out = fitting(recipe_columns(group), out.width)
    best = "best first" if group.rows and group.rows[0].score is not None else "newest first"
    table = Table(title=f"{group.recipe}: {len(group.rows)} run(s), {best}", title_justify="left")
    for index, (header, _) in enumerate(shown):
        table.add_column(header, no_wrap=index != 1, overflow="fold", justify="right" if index == 0 else "left")
    for i in range(len(group.rows)):
        table.add_row(*(cells[i] for _, cells in shown))
    out.print(table)
    if left_out:
        out.print(
            f"  not shown at this width: {', '.join(left_out)} (widen the terminal, or use --json)", highlight=False
        )


@click.command("runs", epilog=RUNS_EPILOG)
@click.option(
    "--tracking-uri",
    default=None,
    envvar="MLFLOW_TRACKING_URI",
    help="MLflow store or server.  [default: sqlite:///mlflow.db here]",
)
@click.option("--experiment", default=None, help="Only this MLflow experiment.  [default: every experiment]")
@click.option("--recipe", default=None, help="Only runs of this recipe.")
@click.option(
    "--sort",
    default=None,
    metavar="METRIC",
    help="Order by this metric, highest first.  [default: each recipe's held-out metric, best first: the "
    "highest accuracy or ROC-AUC, the lowest RMSE]",
)
@click.option("--ascending", is_flag=True, help="With --sort: lowest first (for a loss or an error).")
@click.option("--limit", type=int, default=20, show_default=True, help="Show at most this many runs per recipe.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def runs_command(tracking_uri, experiment, recipe, sort, ascending, limit, as_json) -> None:
    """Which run was best, and why: each recipe's runs with their held-out metric first, then the
    params that differ between them, and the MLflow links to compare them."""
    from ddpx.plugins.trackers.mlflow.runs import list_runs

    listing = list_runs(tracking_uri, experiment, recipe, sort, ascending, limit)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "uri": listing.uri,
                    "compare_url": listing.compare_url() if listing.rows else None,
                    "runs": [asdict(r) for r in listing.rows],
                },
                indent=2,
            )
        )
        return
    out = console()
    if not listing.rows:
        out.print(
            "no ddpx runs yet" + (f" of recipe {recipe}" if recipe else "") + f" in {listing.uri}; "
            "start one with `ddpx recipe NAME`.",
            highlight=False,
            soft_wrap=True,
        )
        return
    for group in listing.groups:
        print_group(out, group)
    opening = f"run `{listing.how_to_open()}`, then open " if listing.how_to_open() else "open "
    out.print(f"In the MLflow UI, {opening}", highlight=False, soft_wrap=True)
    for url in listing.experiment_urls():
        out.print(url, highlight=False, soft_wrap=True)
    out.print("and compare the runs listed here side by side:", highlight=False)
    out.print(listing.compare_url(), highlight=False, soft_wrap=True)
