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


def _selection_row(summary: RunSummary) -> tuple[str, str]:
    """The best epoch of the run, or of each member of an ensemble (with the ensemble's dev value)."""
    if not summary.members:
        return "best epoch", f"{summary.best_epoch} of {summary.epochs_run}" + _best_dev(summary)
    epochs = ", ".join(f"{m['best_epoch']} of {m['epochs_run']}" for m in summary.members)
    dev = f" (the ensemble's dev_{summary.metric} {summary.best_dev:.4f})" if summary.best_dev is not None else ""
    return f"{len(summary.members)} members' best epochs", epochs + dev


def print_summary(recipe_name: str, summary: RunSummary, console: Console | None = None) -> None:
    """The held-out metrics and the run's facts as two aligned columns; the run folder and the MLflow
    run on lines of their own, aligned alike, so rich never breaks a path (the terminal wraps it)."""
    console = console or Console(highlight=False)
    rows = [(key, f"{value:.4f}") for key, value in summary.heldout.items()]
    rows += [
        ("held-out samples", str(summary.heldout_samples)),
        _selection_row(summary),
        ("wall time", f"{summary.wall_seconds:.1f} s"),
    ]
    whole = [("run folder", summary.run_dir)] + ([("MLflow run", summary.run_id)] if summary.run_id else [])
    width = max(len(key) for key, _ in rows + whole)
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True, min_width=width)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value)
    console.print(f"[green]done[/green]: {recipe_name}")
    console.print(table)
    for key, value in whole:
        console.print(f"[bold]{key:<{width}}[/bold]  {value}", markup=True, highlight=False, soft_wrap=True)
    if summary.tracker_hint:
        console.print(summary.tracker_hint, soft_wrap=True)
