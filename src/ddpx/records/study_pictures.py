"""Pictures of an Optuna study for the search's parent run: the optimization history, each
trial's dev curve with the pruned ones cut short, and the parameters' importance. Static PNGs,
drawn with Optuna's own matplotlib plots (no browser needed)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any


def study_pictures(study: Any, folder: Path) -> list[Path]:
    """Write the pictures the study has enough trials for; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna.visualization.matplotlib as plots
    from optuna.trial import TrialState

    finished = [t for t in study.trials if t.state == TrialState.COMPLETE]
    wanted: list[tuple[str, Callable[[Any], Any]]] = [
        ("optimization_history", plots.plot_optimization_history),
        ("dev_curves", plots.plot_intermediate_values),
    ]
    if len(finished) >= 2 and len(study.best_trial.params) >= 1:
        wanted.append(("param_importances", plots.plot_param_importances))
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, plot in wanted:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Optuna marks its matplotlib plots experimental
            try:
                axes = plot(study)
            except (ValueError, RuntimeError):  # too few distinct values to draw this one
                continue
        figure = axes.figure if hasattr(axes, "figure") else axes.flat[0].figure
        figure.set_size_inches(8, 5)
        figure.tight_layout()
        path = folder / f"{name}.png"
        figure.savefig(path, dpi=100)
        plt.close(figure)
        written.append(path)
    return written
