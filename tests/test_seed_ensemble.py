"""Models of separate runs as one ensemble: each run's predictions file read back in its own form and
checked against its run's value, the answers averaged sample by sample, the average scored with the
run's metric (binary labels with a missing one, regression targets, the MLP's classes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from smiles_files import predictions_file

from ddpx.records.heldout_answers import NoValue, read_answers, score
from ddpx.records.seed_ensemble import Member, together


def sigmoid(x: float) -> float:
    return float(1 / (1 + np.exp(-x)))


def members(tmp_path: Path, header: list[str], seeds: list[list[list]], metric: str) -> list[Member]:
    """One member per seed's rows, each with the value its own file gives (as its run's would be)."""
    found = []
    for seed, rows in enumerate(seeds):
        answers = read_answers(predictions_file(tmp_path / f"seed{seed}.csv", header, rows))
        found.append(Member(f"seed {seed}", answers, score(answers, metric)))
    return found


def binary_rows(targets: list[list], logits: list[list[float]]) -> list[list]:
    """Per molecule, each label's target (empty where missing), logit and probability."""
    return [
        [cell for t, x in zip(row_targets, row_logits) for cell in (t, x, sigmoid(x))]
        for row_targets, row_logits in zip(targets, logits)
    ]


def test_binary_labels_average_probabilities_and_leave_a_missing_label_out(tmp_path):
    header = ["target_A", "logit_A", "probability_A", "target_B", "logit_B", "probability_B"]
    targets = [[1, 0], [0, ""], [1, 1], [0, 0]]
    seed0 = [[2.0, 0.3], [0.5, 5.0], [-0.5, 0.2], [-2.0, -1.0]]
    seed1 = [[-1.0, -0.4], [-1.5, 3.0], [1.5, 0.6], [0.0, 0.9]]
    runs = members(tmp_path, header, [binary_rows(targets, seed0), binary_rows(targets, seed1)], "roc_auc")
    assert [m.value for m in runs] == [0.625, 0.625]  # A 0.75 and B 0.5 each; B's missing molecule left out
    mean = (np.vectorize(sigmoid)(seed0) + np.vectorize(sigmoid)(seed1)) / 2
    expected = [roc_auc_score([1, 0, 1, 0], mean[:, 0]), roc_auc_score([0, 1, 0], mean[[0, 2, 3], 1])]
    # the missing molecule's mean probability (0.96) would rank above B's positive were it counted
    assert together(runs, "roc_auc") == np.mean(expected) == 1.0


def test_a_regression_averages_the_predicted_values_per_target(tmp_path):
    header = ["target_t1", "prediction_t1", "target_t2", "prediction_t2"]
    seed0 = [[1.0, 2.0, 0.0, 1.0], [2.0, 2.0, "", 9.0], [3.0, 2.0, 2.0, 1.0]]
    seed1 = [[1.0, 0.0, 0.0, -1.0], [2.0, 3.0, "", 5.0], [3.0, 4.0, 2.0, 3.0]]
    runs = members(tmp_path, header, [seed0, seed1], "rmse")
    assert [m.value for m in runs] == pytest.approx([(np.sqrt(2 / 3) + 1) / 2, 1.0])
    # t1 averaged (1, 2.5, 3): RMSE sqrt(0.25 / 3); t2 averaged (0, -, 2): exact
    assert together(runs, "rmse") == pytest.approx(np.sqrt(0.25 / 3) / 2, abs=1e-12)
    assert together(members(tmp_path, header, [seed0, seed1], "mae"), "mae") == pytest.approx(0.5 / 3 / 2)


def class_rows(targets: list[int], probabilities: list[list[float]]) -> list[list]:
    """The MLP's form: target, predicted, its probability, each class's, then the conformal set (text)."""
    return [[t, int(np.argmax(p)), max(p), *p, "0|1"] for t, p in zip(targets, probabilities)]


def test_the_mlps_classes_average_each_class_probability(tmp_path):
    header = ["target", "predicted", "probability", "probability_0", "probability_1", "probability_2", "set"]
    targets = [0, 1, 2, 1]
    seed0 = [[0.5, 0.3, 0.2], [0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.2, 0.45, 0.35]]  # the second wrong
    seed1 = [[0.4, 0.5, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.1, 0.6, 0.3]]  # the first wrong
    rows = [class_rows(targets, seed0), class_rows(targets, seed1)]
    runs = members(tmp_path, header, rows, "accuracy")
    assert [m.value for m in runs] == [0.75, 0.75]
    assert together(runs, "accuracy") == 1.0  # averaged: (0.45, 0.4, 0.15) ... every argmax right
    mean = (np.array(seed0) + np.array(seed1)) / 2
    macro = roc_auc_score(targets, mean, multi_class="ovr", average="macro")
    assert together(members(tmp_path, header, rows, "roc_auc"), "roc_auc") == pytest.approx(macro, abs=1e-12)


def test_no_ensemble_where_a_file_is_missing_disagrees_or_is_of_other_samples(tmp_path):
    header = ["target", "prediction"]
    one, other = members(tmp_path, header, [[[1.0, 2.0], [3.0, 2.0]], [[1.0, 0.0], [3.0, 4.0]]], "rmse")
    assert together([one, other], "rmse") == 0.0  # the two seeds' errors cancel
    with pytest.raises(NoValue, match="one model is no ensemble"):
        together([one], "rmse")
    with pytest.raises(NoValue, match="seed 1's predictions file gives rmse 1.000000, its run 0.500000"):
        together([one, Member("seed 1", other.answers, 0.5)], "rmse")
    shifted = read_answers(predictions_file(tmp_path / "shifted.csv", header, [[1.0, 2.0], [4.0, 2.0]]))
    with pytest.raises(NoValue, match="the runs' held-out samples differ"):
        together([one, Member("seed 2", shifted, score(shifted, "rmse"))], "rmse")
    with pytest.raises(NoValue, match="does not exist"):
        read_answers(tmp_path / "absent.csv")
