"""``ddpx runs``: a table of tracked runs, their key params and held-out metrics."""

from __future__ import annotations

import json
import time

import click

from ddpx.cli.app import cli, console

RUNS_EPILOG = """\b
Examples:
  ddpx runs
  ddpx runs --recipe bbbp_rnn --sort heldout_roc_auc --limit 5
  ddpx runs --tracking-uri http://127.0.0.1:5000 --experiment ddpx
"""


@cli.command("runs", epilog=RUNS_EPILOG)
@click.option("--tracking-uri", default=None, envvar="MLFLOW_TRACKING_URI",
              help="MLflow store or server.  [default: sqlite:///mlflow.db here]")
@click.option("--experiment", default="ddpx", show_default=True, help="MLflow experiment name.")
@click.option("--recipe", default=None, help="Only runs of this recipe.")
@click.option("--sort", default=None, metavar="METRIC", help="Order by this metric (best first).  [default: newest first]")
@click.option("--ascending", is_flag=True, help="With --sort: lowest first (for a loss).")
@click.option("--limit", type=int, default=20, show_default=True, help="Show at most this many runs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def runs_command(tracking_uri, experiment, recipe, sort, ascending, limit, as_json) -> None:
    """List the runs of an MLflow experiment with their key params and held-out metrics."""
    from dataclasses import asdict

    from ddpx.plugins.trackers.mlflow.runs import list_runs

    listing = list_runs(tracking_uri, experiment, recipe, sort, ascending, limit)
    if as_json:
        click.echo(json.dumps({"uri": listing.uri, "experiment_id": listing.experiment_id,
                               "runs": [asdict(r) for r in listing.rows]}, indent=2))
        return
    from rich.table import Table

    table = Table(title=f"runs of experiment '{experiment}' in {listing.uri}", title_justify="left")
    table.add_column("run", no_wrap=True)
    for column in ("status", "recipe", "sweep", "started"):
        table.add_column(column, overflow="fold")
    for name in listing.param_columns:
        table.add_column(name, overflow="fold")
    for name in listing.metric_columns:
        table.add_column(name, justify="right")
    for row in listing.rows:
        started = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.started / 1000)) if row.started else "-"
        cells = [row.name, row.status, row.recipe, row.sweep, started]
        cells += [row.params.get(p, "") for p in listing.param_columns]
        cells += [f"{row.metrics[m]:.4f}" if m in row.metrics else "" for m in listing.metric_columns]
        table.add_row(*cells)
    out = console()
    out.print(table)
    if not listing.rows:
        out.print("no runs yet" + (f" of recipe {recipe}" if recipe else "") + "; start one with `ddpx recipe NAME`.")
        return
    out.print(f"Compare them in the MLflow UI: {listing.ui_address()}", soft_wrap=True, highlight=False)
    out.print(f"These runs side by side: append {listing.compare_path()}", soft_wrap=True, highlight=False)
