"""Several labels per molecule (Tox21, SIDER, ClinTox): reading files with missing cells, the
masked loss, MoleculeNet's mean ROC-AUC, per-label values, and the scaffold splitter."""

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score
from smiles_files import LABELS, write_multilabel_csv

from ddpx.api import UserError
from ddpx.contract.specs import MetricSpec
from ddpx.plugins.metrics import roc_auc
from ddpx.plugins.smiles.csv_table import SmilesTable, read_smiles_csv
from ddpx.plugins.smiles.data import log_one_class_labels
from ddpx.plugins.smiles.splits import scaffold_split
from ddpx.rank.loop.evaluation import Predictions, per_label_metrics
from ddpx.rank.loop.losses import loss_function


def test_a_gzipped_file_with_missing_cells_reads_as_labels_with_nan(tmp_path):
    path = write_multilabel_csv(tmp_path / "tox.csv.gz", n=40, gzip_it=True)
    table = read_smiles_csv(path, "smiles", LABELS, strict=True)
    assert len(table.labels) == 40 and table.label_names == LABELS
    first = table.labels[0]  # row 0: "has, Br" missing, "rare" present (0)
    assert first[0] == 0.0 and math.isnan(first[1]) and first[2] == 0.0
    assert sum(not math.isnan(row[2]) for row in table.labels) == 4  # every tenth molecule has "rare"


def test_bad_cells_rows_without_labels_and_empty_columns(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text('smiles,"has Cl","has, Br",rare\nCCCl,1,0,1\nCCBr,0,2,\nCCO,,,\nCCN,0,NaN,\n')
    table = read_smiles_csv(path, "smiles", LABELS, strict=False)
    assert len(table.labels) == 2 and table.smiles == ["CCCl", "CCN"]
    assert "a label that is not 0/1 or empty in 'has, Br' (line 3)" in table.skipped_report()
    assert "no label in any label column (line 4)" in table.skipped_report()
    with pytest.raises(
        UserError, match="label column 'rare' of .* holds no label .*remove it from dataset.label_columns"
    ):
        read_smiles_csv(_without_rare_labels(tmp_path), "smiles", LABELS, strict=False)
    with pytest.raises(UserError, match="has no column 'has Br'.*Set dataset.label_columns"):
        read_smiles_csv(path, "smiles", ["has Cl", "has Br"], strict=False)


def _without_rare_labels(tmp_path):
    path = tmp_path / "empty-column.csv"
    path.write_text('smiles,"has Cl","has, Br",rare\nCCCl,1,0,\nCCBr,0,1,nan\n')
    return path


def test_the_loss_learns_nothing_from_a_missing_cell():
    loss_fn = loss_function("bce_with_logits")
    targets = torch.tensor([[1.0, float("nan")], [0.0, 1.0], [float("nan"), float("nan")]])
    logits = torch.tensor([[2.0, -3.0], [0.5, 1.0], [4.0, -4.0]], requires_grad=True)
    loss = loss_fn(logits, targets)
    present = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor([2.0, 0.5, 1.0]), torch.tensor([1.0, 0.0, 1.0])
    )
    assert loss.item() == pytest.approx(present.item())  # the mean over the three cells that hold a label
    loss.backward()
    missing = torch.isnan(targets)
    assert torch.all(logits.grad[missing] == 0) and torch.all(logits.grad[~missing] != 0)
    single = loss_fn(torch.tensor([0.3, -0.2]), torch.tensor([1.0, 0.0]))  # one label: as before
    assert single.item() == pytest.approx(
        torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor([0.3, -0.2]), torch.tensor([1.0, 0.0])).item()
    )


def test_mean_roc_auc_ignores_missing_cells_and_labels_with_one_class():
    rng = np.random.default_rng(0)
    targets = rng.integers(0, 2, size=(60, 3)).astype(float)
    outputs = rng.normal(size=(60, 3)) + targets
    targets[::4, 0] = np.nan
    targets[:, 2] = 1.0  # one class only: left out of the mean
    targets[::7, 2] = np.nan
    expected = np.mean(
        [roc_auc_score(targets[~np.isnan(targets[:, j]), j], outputs[~np.isnan(targets[:, j]), j]) for j in (0, 1)]
    )
    assert roc_auc(targets, outputs) == pytest.approx(expected, abs=1e-12)
    scrambled = outputs.copy()
    scrambled[np.isnan(targets)] = 1e6  # what a model says about a missing cell does not count
    assert roc_auc(targets, scrambled) == roc_auc(targets, outputs)
    with pytest.raises(UserError, match="both classes of at least one label"):
        roc_auc(np.ones((5, 2)), np.zeros((5, 2)))


def test_per_label_values_have_names_a_tracker_accepts():
    metric = MetricSpec("roc_auc", "", roc_auc)
    targets = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0], [1.0, float("nan"), 1.0], [0.0, 0.0, 1.0]])
    outputs = torch.tensor([[2.0, -1.0, 0.0], [-1.0, 1.0, 0.0], [1.0, 5.0, 0.0], [-2.0, 0.5, 0.0]])
    values = per_label_metrics(Predictions(outputs, targets), metric, LABELS, "heldout")
    assert values == {"heldout_roc_auc/has Cl": 1.0, "heldout_roc_auc/has_ Br": 1.0}  # "rare": one class


def test_labels_a_split_cannot_score_are_named():
    nan = float("nan")
    table = SmilesTable(labels=[(1.0, 0.0, nan), (0.0, 1.0, 1.0), (1.0, 1.0, nan), (0.0, nan, 0.0)], label_names=LABELS)
    said = []
    log_one_class_labels(table, {"dev": [0, 1, 2], "held-out": [0, 1, 2, 3]}, said.append)
    assert said == ["1 label(s) have one class (or none) in the dev split and are left out of its mean ROC-AUC: rare"]


def test_scaffold_split_follows_moleculenet_a_later_small_set_still_fits_in_training():
    pytest.importorskip("rdkit")
    # scaffold sets of sizes 5 (benzene), 3 (cyclohexane), 2 (pyridine) and 1 (furan); with a
    # training share of 0.6 * 11 = 6.6 the 3-set does not fit after the 5-set, but the 1-set does
    smiles = ["c1ccccc1C"] * 5 + ["C1CCCCC1C"] * 3 + ["c1ccncc1C"] * 2 + ["c1ccoc1C"]
    train, dev, heldout = scaffold_split([f"{s}{'C' * i}" for i, s in enumerate(smiles)], 0.2, 0.25)
    assert sorted(train) == [0, 1, 2, 3, 4, 10] and sorted(dev) == [5, 6, 7] and sorted(heldout) == [8, 9]
