"""The files a report is made of: a figure drawn straight to PNG, and a predictions table as CSV.

Shared by the held-out reports (:mod:`ddpx.records.reports`) and the several-label ones
(:mod:`ddpx.records.label_reports`).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ddpx.records.atomic_save import removed_if_failed


def new_figure(size: tuple[float, float]):
    """A figure drawn straight to PNG by Agg: no pyplot (its import and global state cost each
    run half a second), nothing left open."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def save_figure(fig, path: Path) -> Path:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    with removed_if_failed(path):
        fig.savefig(path, dpi=100)
    return path


def predictions_csv(header: list[str], columns: list[np.ndarray], path: Path) -> Path:
    """One row per sample: its index in the split, then one value from each column."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with removed_if_failed(path), path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["index", *header])
        for index, row in enumerate(zip(*(c.tolist() for c in columns))):
            writer.writerow([index, *row])
    return path
