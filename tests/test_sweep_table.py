"""The table ``ddpx sweep`` prints at its end, as a user reads it: in a terminal 80, 100 and 120
columns wide and piped (200), every value whole, the metric's names heading its columns."""

import io
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from ddpx.cli import sweep_report
from ddpx.contract.records import RunSummary
from ddpx.launch.sweep import Sweep, Trial


def finished_sweep() -> Sweep:
    grid = {"train.lr": ["0.001", "0.0003"], "model.d_model": ["64", "128"]}
    trials = []
    for number, (lr, width) in enumerate([(lr, w) for lr in grid["train.lr"] for w in grid["model.d_model"]], 1):
        summary = RunSummary(
            heldout={"heldout_roc_auc": 0.85 + number / 100, "heldout_loss": 0.5},
            metric="roc_auc",
            greater_is_better=True,
            best_dev=0.9 + number / 100,
            best_epoch=3,
            epochs_run=5,
            wall_seconds=10.0,
            heldout_samples=100,
        )
        folder = Path(f"/home/someone/projects/ddpx-runs/bbbp_rnn-20261130-0040{number:02d}-ab1{number}")
        job = SimpleNamespace(run_dir=SimpleNamespace(path=folder))
        trials.append(Trial(number, {"train.lr": lr, "model.d_model": width}, None, job, "FINISHED", summary))
    trials[2].status, trials[2].summary, trials[2].error = "FAILED", None, "RuntimeError: out of memory"
    return Sweep("bbbp_rnn", grid, ["dataset.path=/data/BBBP.csv"], trials, "abc123")


@pytest.mark.parametrize("columns", [80, 100, 120, 200])  # 200: piped (ddpx.contract.terminal)
def test_the_finished_table_fits_with_every_value_whole(monkeypatch, columns):
    out = Console(width=columns, record=True, file=io.StringIO())
    monkeypatch.setattr(sweep_report, "console", lambda: out)
    sweep_report.print_trials(finished_sweep(), "ddpx sweep bbbp_rnn: 4 trial(s)")
    text = out.export_text()
    table = [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    assert all(len(line) <= columns for line in table), text
    header = [cell.strip() for cell in next(line for line in table if line.startswith("┃")).strip("┃").split("┃")]
    assert header == ["trial", "train.lr", "model.d_model", "status", "dev_roc_auc", "heldout_roc_auc"], text
    rows = [[cell.strip() for cell in line.strip("│").split("│")] for line in table if line.startswith("│")]
    assert rows == [
        ["1", "0.001", "64", "FINISHED", "0.9100", "0.8600"],
        ["2", "0.001", "128", "FINISHED", "0.9200", "0.8700"],
        ["3", "0.0003", "64", "FAILED", "-", "-"],
        ["4 *", "0.0003", "128", "FINISHED", "0.9400", "0.8900"],
    ], text  # one line a trial: no value wrapped or cut
    assert "run folder of trial 4: /home/someone/projects/ddpx-runs/bbbp_rnn-20261130-004004-ab14" in text
    assert "(the highest dev_roc_auc, 0.9400): 4" in " ".join(text.split())
