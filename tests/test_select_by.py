"""``train.select_by``: which epoch's weights a run keeps. ``metric`` (the default) keeps the best
dev metric; ``loss`` the lowest dev loss, as Chemprop's default and Lightning's ``val_loss``
checkpoints do. The rule alone, then on a real rank: the summary, ``best.pt``, the end-of-run
table and the tracker's note all name the epoch of the lowest dev loss."""

from __future__ import annotations

import io
import json

import pytest
import torch
from conftest import TEST_RECIPES
from rich.console import Console

from ddpx.api import UserError
from ddpx.cli.summary_table import print_summary
from ddpx.contract.records import RunSummary
from ddpx.plugin_host.registry import load_registry
from ddpx.rank.loop.epochs import is_better
from ddpx.records.checkpoint_file import check_resumable
from ddpx.records.tracking import result_note

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def test_by_loss_the_lower_dev_loss_wins_and_a_tie_goes_to_the_better_metric():
    accuracy = load_registry().get("metrics", "accuracy")
    best = (0.90, 0.30)  # (dev metric, dev loss) of the best epoch so far
    assert is_better(0.80, 0.25, best, accuracy, "loss") and not is_better(0.95, 0.35, best, accuracy, "loss")
    assert is_better(0.95, 0.30, best, accuracy, "loss") and not is_better(0.85, 0.30, best, accuracy, "loss")
    assert not is_better(0.99, float("nan"), best, accuracy, "loss")  # a NaN loss never wins
    assert is_better(0.10, 9.0, None, accuracy, "loss")  # the first epoch is the best so far
    # the default rule on the same results: the metric decides
    assert not is_better(0.80, 0.25, best, accuracy) and is_better(0.95, 0.35, best, accuracy)
    rmse = load_registry().get("metrics", "rmse")  # lower is better: a loss tie goes to the lower metric
    assert is_better(0.4, 0.30, (0.5, 0.30), rmse, "loss") and not is_better(0.6, 0.30, (0.5, 0.30), rmse, "loss")
    assert is_better(float("nan"), 0.2, best, accuracy, "loss")  # by loss, an undefined dev metric does not stop it


def test_a_checkpoint_cannot_resume_under_the_other_rule():
    state = {
        "model": {},
        "optimizer": {},
        "epoch": 2,
        "ranks": [],
        "recipe": {"model": {"name": "mlp"}, "train": {"select_by": "metric"}},
    }
    config = {"model": {"name": "mlp"}, "train": {"select_by": "loss", "wrapper": "ddp"}}
    with pytest.raises(UserError, match="Resume it with train.select_by=metric"):
        check_resumable(state, "last.pt", config)
    check_resumable(state, "last.pt", {**config, "train": {"select_by": "metric", "wrapper": "ddp"}})
    del state["recipe"]["train"]["select_by"]  # a checkpoint from before the key: kept by the metric
    check_resumable(state, "last.pt", {**config, "train": {"select_by": "metric", "wrapper": "ddp"}})


@pytest.mark.slow
def test_a_run_selected_by_dev_loss_keeps_the_epoch_of_the_lowest_dev_loss(job_here, tmp_path):
    # lr 0.5 on the tiny MLP: the dev loss turns up after the first epochs while the accuracy still climbs
    result = job_here(TINY, "train.max_epochs=5", "train.lr=0.5", "train.select_by=loss", nproc=1)
    (run_dir,) = result.run_dirs()
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if "dev_loss" in line]
    losses = [row["dev_loss"] for row in rows]
    lowest = losses.index(min(losses)) + 1
    summary = RunSummary.read(run_dir / "summary.json")
    assert (summary.selected_by, summary.best_epoch, summary.best_dev_loss) == ("loss", lowest, min(losses)), rows
    assert summary.best_dev == rows[lowest - 1]["dev_accuracy"]
    accuracies = [row["dev_accuracy"] for row in rows]
    assert accuracies.index(max(accuracies)) + 1 != lowest, rows  # selection by the metric would keep another epoch
    assert torch.load(run_dir / "checkpoints" / "best.pt", weights_only=True)["epoch"] == lowest
    out = io.StringIO()
    print_summary("tiny_mlp", summary, Console(file=out, width=120))
    assert (
        f"{lowest} of 5 (the lowest dev loss, {min(losses):.4f}; dev_accuracy {summary.best_dev:.4f})" in out.getvalue()
    ), out.getvalue()
    assert f"on the dev split (by dev loss) was epoch {lowest}." in result_note(summary)
