"""How ``ddpx sweep`` shows its trials: a line as each ends, a table of all of them.

While trials run, a line shows a trial's dev value only: the sweep (and a search) chooses on dev,
and no held-out value is shown before the choice is made. The table at the end, printed once
the best trial is chosen and recorded on the parent run, shows both.
"""

from __future__ import annotations

from rich.table import Table

from ddpx.cli.app import console
from ddpx.launch.sweep import Sweep, Trial


def _metric_text(trial: Trial) -> str:
    if trial.summary is None:
        return "-"
    name, value = trial.summary.heldout_metric
    return f"{name} {value:.4f}"


def dev_text(trial: Trial) -> str:
    """``dev_accuracy 0.9120``: what a trial shows while the sweep still chooses (never its held-out value)."""
    summary = trial.summary
    if summary is None or summary.best_dev is None:
        return "-"
    return f"dev_{summary.metric} {summary.best_dev:.4f}"


def _metric_names(sweep: Sweep) -> tuple[str, str]:
    """``("dev_roc_auc", "heldout_roc_auc")``: the trials' metric (one recipe, one metric)."""
    summary = next((t.summary for t in sweep.trials if t.summary is not None), None)
    return ("dev", "held-out") if summary is None else (f"dev_{summary.metric}", summary.heldout_metric[0])


def _values(trial: Trial) -> tuple[str, str]:
    """The trial's dev and held-out values, ``-`` where it has none."""
    summary = trial.summary
    if summary is None:
        return "-", "-"
    dev = "-" if summary.best_dev is None else f"{summary.best_dev:.4f}"
    return dev, f"{summary.heldout_metric[1]:.4f}"


def _best_dev_text(trial: Trial) -> str:
    """``the lowest dev_rmse, 0.3120`` (or the highest, for a metric where higher is better)."""
    summary = trial.summary
    return f"the {'highest' if summary.greater_is_better else 'lowest'} dev_{summary.metric}, {summary.best_dev:.4f}"


def _error_text(error: str | None) -> str:
    """The error's first line and, for a traceback, its last (the exception itself)."""
    lines = [line.strip() for line in (error or "").splitlines() if line.strip()]
    if not lines:
        return "no error recorded"
    return lines[0] if len(lines) == 1 else f"{lines[0]} {lines[-1]}"


def print_trial(trial: Trial) -> None:
    mark = {"FINISHED": "[green]done[/green]", "PRUNED": "[yellow]pruned[/yellow]"}.get(
        trial.status, "[red]FAILED[/red]"
    )
    detail = _error_text(trial.error) if trial.status == "FAILED" else dev_text(trial)
    if trial.status == "PRUNED":
        detail += f" (stopped after epoch {trial.summary.pruned_after})"
    console().print(f"{mark} trial {trial.number} ({trial.label}): {detail}", highlight=False, soft_wrap=True)


def print_trials(sweep: Sweep, title: str) -> None:
    """The title on a line of its own (a recipe's path in it is never broken: the terminal wraps it,
    rich does not), the trials' table, then each trial's run folder, whole, on its own line."""
    planned = all(t.status == "PENDING" for t in sweep.trials)
    best = None if planned else sweep.best()
    table = Table()
    table.add_column("trial", justify="right")
    for key in sweep.grid:
        table.add_column(key, overflow="fold")  # a word longer than its column is folded, never cut off
    if not planned:  # the metric's names head the columns, so that a cell is a number, narrow
        dev_name, heldout_name = _metric_names(sweep)
        table.add_column("status", overflow="fold")
        table.add_column(dev_name, overflow="fold", justify="right")
        table.add_column(heldout_name, overflow="fold", justify="right")
    for trial in sweep.trials:
        row = [str(trial.number) + (" *" if trial is best else ""), *trial.overrides.values()]
        if not planned:
            row += [trial.status, *_values(trial)]
        table.add_row(*row)
    out = console()
    out.print(title, highlight=False, soft_wrap=True)
    out.print(table)
    if not planned:
        for trial in sweep.trials:
            folder = str(trial.job.run_dir.path) if trial.job.run_dir else "-"
            out.print(f"run folder of trial {trial.number}: {folder}", highlight=False, soft_wrap=True)
    if sweep.fixed:
        out.print("every trial also sets: " + " ".join(sweep.fixed), highlight=False, soft_wrap=True)
    if best is not None:
        out.print(
            f"* best trial on the dev metric ({_best_dev_text(best)}): {best.number} ({best.label}), "
            f"{_metric_text(best)}",
            highlight=False,
        )
    if sweep.parent_run_id:
        out.print(f"MLflow parent run: {sweep.parent_run_id} (its trials are nested under it)", highlight=False)
