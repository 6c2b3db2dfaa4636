"""Gradient accumulation on real ranks: K=2 micro-batches of B give the weights of one batch of
2B, with clipping and a warmed-up cosine schedule on both; MLflow gets the global batch and the
per-step gradient norm."""

import pytest
import torch
from conftest import TEST_RECIPES
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow  # starts ranks

TINY = str(TEST_RECIPES / "tiny_mlp.toml")
COMMON = (
    "dataset.train_size=320",
    "train.max_epochs=2",
    "train.clip_grad_norm=0.3",
    "train.lr_schedule=cosine",
    "train.warmup_fraction=0.1",
    "train.log_every_n_steps=1",
)


def last_weights(result):
    (run_dir,) = result.run_dirs()
    return torch.load(run_dir / "checkpoints" / "last.pt", weights_only=True)["model"]


def test_two_micro_batches_of_b_train_the_weights_of_one_batch_of_2b(job_here, tmp_path, new_store):
    (tmp_path / "k2").mkdir(), (tmp_path / "k1").mkdir()
    accumulated = job_here(
        TINY, *COMMON, "train.batch_size=8", "train.accumulate=2", tracking_uri=new_store, cwd=tmp_path / "k2"
    )
    whole = job_here(TINY, *COMMON, "train.batch_size=16", cwd=tmp_path / "k1")

    a, b = last_weights(accumulated), last_weights(whole)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-5), key
    assert accumulated.summary()["heldout"] == pytest.approx(whole.summary()["heldout"], rel=1e-5)

    client = MlflowClient(new_store)
    experiment = client.get_experiment_by_name("tiny_mlp")
    assert experiment.artifact_location == str(
        tmp_path / "k2" / "mlruns" / experiment.experiment_id
    )  # where it started
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.data.params["global_batch_size"] == "32" and run.data.params["train.accumulate"] == "2"
    norms = client.get_metric_history(run.info.run_id, "step/grad_norm")
    assert [m.step for m in norms] == list(range(1, 21)), "one norm per optimizer step: 2 epochs of 160/16"
    assert max(m.value for m in norms) > 0.3, "the norm before clipping is logged, and clipping was needed"
    rates = [m.value for m in sorted(client.get_metric_history(run.info.run_id, "step/lr"), key=lambda m: m.step)]
    assert rates[0] < rates[1] == pytest.approx(0.1) and rates[-1] < 0.001, "2 warm-up steps, then cosine to 0"
