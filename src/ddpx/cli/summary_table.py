"""The short report printed when a run ends: held-out metric, best epoch, time, where to look."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ddpx.contract.records import RunSummary


def _best_dev(summary: RunSummary) -> str:
    """`` (the lowest dev_rmse, 0.3120)``: what chose the epoch, in the metric's direction."""
    if summary.best_dev is None:
        return ""
    if summary.selected_by == "loss" and summary.best_dev_loss is not None:
        return f" (the lowest dev loss, {summary.best_dev_loss:.4f}; dev_{summary.metric} {summary.best_dev:.4f})"
    return f" (the {'highest' if summary.greater_is_better else 'lowest'} dev_{summary.metric}, {summary.best_dev:.4f})"


def print_summary(recipe_name: str, summary: RunSummary, console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in summary.heldout.items():
        table.add_row(key, f"{value:.4f}")
    table.add_row("held-out samples", str(summary.heldout_samples))
    table.add_row("best epoch", f"{summary.best_epoch} of {summary.epochs_run}" + _best_dev(summary))
    table.add_row("wall time", f"{summary.wall_seconds:.1f} s")
    table.add_row("run folder", summary.run_dir)
    if summary.run_id:
        table.add_row("MLflow run", summary.run_id)
    console.print(f"[green]done[/green]: {recipe_name}")
    console.print(table)
    if summary.tracker_hint:
        console.print(summary.tracker_hint, soft_wrap=True)
