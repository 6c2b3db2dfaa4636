"""Held-out metrics are exact: the same weights score on 3 ranks (uneven shards, several batches
each) what a plain single-process computation gives over the whole held-out split. (On 2 ranks:
test_resume.py's checkpoint resumed on 2 ranks is scored the same way.)"""

import pytest
import torch
import torch.nn.functional as F
from conftest import TEST_RECIPES
from sklearn.metrics import accuracy_score

from ddpx.plugins.mlp_synthetic.data import make_splits
from ddpx.plugins.mlp_synthetic.model import MLP
from ddpx.records.checkpoint_file import load_model_weights

pytestmark = pytest.mark.slow  # every test here starts ranks

TINY = str(TEST_RECIPES / "tiny_mlp.toml")
HELDOUT = 1001  # not a multiple of 3: shards are uneven on 3 ranks
DATASET = {
    "train_size": 1200,
    "dev_size": 300,
    "heldout_size": HELDOUT,
    "dim_in": 64,
    "n_classes": 8,
    "class_sep": 0.8,
    "label_noise": 0.03,
}


def trained_weights(data, path):
    """The tiny recipe's model, trained a little in this process (a plain state dict)."""
    torch.manual_seed(0)
    model = MLP(64, 8, 64, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    inputs, targets = data.train.tensors
    for start in range(0, len(targets), 64):
        optimizer.zero_grad()
        F.cross_entropy(model(inputs[start : start + 64]), targets[start : start + 64]).backward()
        optimizer.step()
    torch.save(model.state_dict(), path)
    return path


def test_heldout_metric_on_3_ranks_equals_the_single_process_value(job_here, tmp_path):
    data = make_splits(DATASET, seed=0)
    weights = trained_weights(data, tmp_path / "weights.pt")

    scores = {}
    for nproc in (3,):
        workdir = tmp_path / f"eval{nproc}"
        workdir.mkdir()
        result = job_here(
            TINY,
            f"dataset.heldout_size={HELDOUT}",
            "train.max_epochs=0",
            f"train.init_from={weights}",
            "train.eval_batch_size=64",
            nproc=nproc,
            cwd=workdir,
        )
        summary = result.summary()
        assert summary["heldout_samples"] == HELDOUT
        scores[nproc] = summary["heldout"]

    # a plain single-process computation over exactly the held-out split
    model = MLP(64, 8, 64, 3)
    load_model_weights(model, weights)
    model.eval()
    inputs, targets = data.heldout.tensors
    with torch.no_grad():
        logits = model(inputs)
    expected_accuracy = accuracy_score(targets.numpy(), logits.argmax(1).numpy())
    expected_loss = F.cross_entropy(logits, targets).item()
    assert expected_accuracy > 0.5  # trained weights (8 classes), not chance

    for nproc, heldout in scores.items():
        assert heldout["heldout_accuracy"] == expected_accuracy, nproc
        assert heldout["heldout_loss"] == pytest.approx(expected_loss, rel=1e-5), nproc
