"""The built-in metrics and the held-out confusion matrix: scikit-learn's numbers, and
scikit-learn imported only where a metric needs it, before training starts."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix

from ddpx.records.reports import confusion_counts
from ddpx.plugins.metrics import accuracy


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
    assert out.split() == ["2", "True", "False", "False"]
    assert (tmp_path / "heldout_confusion_matrix.png").stat().st_size > 0


@pytest.mark.parametrize("task, imported", [("bbbp", True), ("mlp_synthetic", False)])
def test_rank_zero_imports_what_its_metric_needs_before_training(task, imported):
    out = python_output(
        "import sys, types\n"
        "from ddpx.plugin_host.registry import load_registry\n"
        "from ddpx.rank.worker import _import_metric_modules\n"
        f"_import_metric_modules(types.SimpleNamespace(config={{'task': {task!r}, 'dataset': {{}}}}), load_registry())\n"
        "print('sklearn.metrics' in sys.modules)\n"
    )
    assert out.strip() == str(imported)
