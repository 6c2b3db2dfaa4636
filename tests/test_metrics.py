"""The built-in metrics and the held-out confusion matrix: scikit-learn's numbers, and
scikit-learn imported only where a metric needs it, before training starts."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, roc_auc_score

from ddpx.contract.errors import UserError
from ddpx.plugins.metrics import accuracy
from ddpx.records.reports import confusion_counts


@pytest.mark.parametrize("shape", [(500, 7), (500, 1), (500,)])
def test_accuracy_equals_scikit_learns(shape):
    rng = np.random.default_rng(0)
    outputs = rng.normal(size=shape).astype(np.float32)
    n_classes = shape[1] if len(shape) == 2 and shape[1] > 1 else 2
    targets = rng.integers(0, n_classes, size=shape[0]).astype(np.float32)  # binary targets come as floats
    predicted = outputs.argmax(axis=1) if n_classes > 2 else (outputs.reshape(-1) > 0).astype(int)
    expected = accuracy_score(targets.astype(int), predicted)
    assert 0.0 < expected < 1.0
    assert accuracy(targets, outputs) == pytest.approx(expected, abs=0)


def test_macro_roc_auc_of_several_classes_is_scikit_learns_one_vs_rest_on_the_softmax():
    from ddpx.plugins.metrics import class_probabilities, roc_auc

    rng = np.random.default_rng(2)
    targets = rng.integers(0, 4, size=300)
    logits = (rng.normal(size=(300, 4)) + 1.5 * np.eye(4)[targets]).astype(np.float32)
    probabilities = np.exp(logits.astype(np.float64)) / np.exp(logits.astype(np.float64)).sum(1, keepdims=True)
    value = roc_auc(targets.astype(np.float32), logits)  # class targets come as floats from a SMILES task
    assert 0.6 < value < 1 and value == roc_auc_score(targets, probabilities, multi_class="ovr", average="macro")
    assert np.allclose(class_probabilities(logits), probabilities, rtol=0, atol=1e-15)
    absent = targets != 2  # a split without class 2: the mean over the classes it has
    alone = [roc_auc_score(targets[absent] == k, probabilities[absent, k]) for k in (0, 1, 3)]
    assert roc_auc(targets[absent], logits[absent]) == pytest.approx(np.mean(alone), abs=1e-15)
    with pytest.raises(UserError, match="two classes or more"):
        roc_auc(np.zeros(10), logits[:10])


def test_confusion_counts_equal_scikit_learns():
    rng = np.random.default_rng(1)
    targets = rng.integers(0, 10, size=1000)
    predicted = np.where(rng.random(1000) < 0.7, targets, rng.integers(0, 10, size=1000))
    predicted[:5] = 12  # a label outside the classes is left out, as scikit-learn does with labels=
    expected = confusion_matrix(targets, predicted, labels=list(range(10)))
    counts = confusion_counts(targets, predicted, 10)
    assert counts.shape == (10, 10)
    assert (counts == expected).all()
    assert counts.sum() == 995


def python_output(code: str) -> str:
    """What a new interpreter running ``code`` prints."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_accuracy_tasks_never_import_scikit_learn(tmp_path):
    """An accuracy task's dev metric and held-out reports need numpy only: scikit-learn (with
    pandas and pyarrow) is not imported mid-run on rank 0 while the other ranks wait."""
    out = python_output(
        "import sys, types, numpy as np, torch\n"
        "from ddpx.plugins.metrics import accuracy\n"
        "from ddpx.records.reports import heldout_reports\n"
        "rng = np.random.default_rng(0)\n"
        "outputs = rng.normal(size=(64, 4)).astype(np.float32)\n"
        "targets = rng.integers(0, 4, size=64)\n"
        "value = accuracy(targets, outputs)\n"
        "preds = types.SimpleNamespace(outputs=torch.from_numpy(outputs), targets=torch.from_numpy(targets))\n"
        f"files = heldout_reports(preds, 'cross_entropy', {{}}, __import__('pathlib').Path({str(tmp_path)!r}))\n"
        "print(len(files), 0 <= value <= 1, 'sklearn' in sys.modules, 'pandas' in sys.modules)\n"
    )
    assert out.split() == ["3", "True", "False", "False"]
    assert (tmp_path / "heldout_confusion_matrix.png").stat().st_size > 0
    rows = (tmp_path / "heldout_confusion_matrix.csv").read_text().splitlines()
    assert rows[0] == "true,0,1,2,3" and sum(int(n) for row in rows[1:] for n in row.split(",")[1:]) == 64


@pytest.mark.parametrize("task, imported", [("bbbp", True), ("mlp_synthetic", False)])
def test_rank_zero_imports_what_its_metric_needs_before_training(task, imported):
    out = python_output(
        "import sys, types\n"
        "from ddpx.plugin_host.registry import load_registry\n"
        "from ddpx.rank.run_context import import_metric_modules\n"
        "registry = load_registry()\n"
        f"import_metric_modules(registry.get('metrics', registry.task_of({{'task': {task!r}, 'dataset': {{}}}}).metric))\n"
        "print('sklearn.metrics' in sys.modules)\n"
    )
    assert out.strip() == str(imported)


@pytest.mark.parametrize("labels", [1, 3])
def test_the_predictions_file_ranks_confident_molecules_as_the_metric_did(tmp_path, labels):
    """Logits of 17 and more read 1.0 as float32 probabilities: the file keeps the logits and
    float64 probabilities, so the held-out ROC-AUC recomputed from it is the run's, to every digit."""
    import csv
    import types

    import torch

    from ddpx.plugins.metrics import roc_auc
    from ddpx.records.reports import heldout_reports

    logits = np.tile(np.array([17.5, 18.0, 19.0, 20.0, 21.0, 22.5, 3.0, -2.0], dtype=np.float32)[:, None], (1, labels))
    targets = np.tile(np.array([1, 0, 1, 0, 1, 1, 0, 1], dtype=np.float32)[:, None], (1, labels))
    assert len(set(torch.sigmoid(torch.from_numpy(logits[:6, 0])).tolist())) == 1  # float32: six ties at 1.0
    value = roc_auc(targets, logits) if labels > 1 else roc_auc(targets[:, 0], logits[:, 0])
    shape = (lambda a: a) if labels > 1 else (lambda a: a[:, 0])
    preds = types.SimpleNamespace(outputs=torch.from_numpy(shape(logits)), targets=torch.from_numpy(shape(targets)))
    names = [f"L{j}" for j in range(labels)]
    files = heldout_reports(preds, "bce_with_logits", {"labels": names} if labels > 1 else {}, tmp_path)
    rows = list(csv.DictReader((tmp_path / "heldout_predictions.csv").open(newline="")))
    suffixes = [f"_{n}" for n in names] if labels > 1 else [""]
    for s in suffixes:
        probabilities = [float(r["probability" + s]) for r in rows]
        assert len(set(probabilities)) == 8 and max(probabilities) < 1.0
        again = roc_auc_score([int(r["target" + s]) for r in rows], [float(r["logit" + s]) for r in rows])
        assert again == value and roc_auc_score([int(r["target" + s]) for r in rows], probabilities) == value
    assert all(f.stat().st_size > 0 for f in files)
