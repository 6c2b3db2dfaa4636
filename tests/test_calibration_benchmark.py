"""``benchmarks/calibration/run.py`` without a study: the cross-fitting of the three calibrators on
made dev logits, and the report's table and tally read from its record."""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent  # on sys.path: `benchmarks` importable
sys.path.insert(0, str(ROOT))

from benchmarks.calibration.run import METHODS, cross_fitted, report  # noqa: E402


def test_cross_fitting_scores_each_calibrator_on_dev_molecules_it_was_not_fitted_on():
    rng = np.random.default_rng(3)
    y = np.r_[np.zeros(60), np.ones(12)]  # few of one class, as ClinTox's dev labels
    z = 4 * (2 * y - 1) + rng.normal(0, 3, len(y))  # an overconfident model: three times too sure
    scores = cross_fitted(z, y)
    assert set(scores) == set(METHODS) and all(set(s) == {"nll", "ece"} for s in scores.values())
    assert scores["labels"]["nll"] < scores["none"]["nll"] and scores["platt"]["nll"] < scores["none"]["nll"]


def test_the_report_averages_each_models_labels_and_seeds_and_counts_where_platts_targets_win():
    def row(candidate, seed, label, labels_nll, platt_nll):
        scores = {"none": {"nll": 0.5, "ece": 0.1}, "labels": {"nll": labels_nll, "ece": 0.05}}
        scores["platt"] = {"nll": platt_nll, "ece": 0.04}
        return {"set": "s", "candidate": candidate, "seed": seed, "label": label, "scores": scores}

    record = {"measured": "today", "study": "x.toml", "folds": 5, "shuffles": 4}
    record["rows"] = [row("a", 0, 0, 0.30, 0.20), row("a", 1, 0, 0.30, 0.50), row("b", 0, 0, 0.30, 0.29)]
    text = report(record)
    assert "| s | a | 2 | 0.5000 | 0.3000 | 0.3500 | 0.1000 | 0.0500 | 0.0400 |" in text
    assert "| s | b | 1 | 0.5000 | 0.3000 | 0.2900 |" in text
    assert "lower on 1 of 2 models' dev NLL and 2 of 2 models' dev ECE" in text
