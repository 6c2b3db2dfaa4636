"""``train.global_batch_size``: a recipe's optimizer steps do not depend on how many ranks run it."""

import pytest
import torch
from conftest import TEST_RECIPES

from ddpx.config.global_batch import per_rank_batch
from ddpx.contract.errors import UserError

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def test_the_global_batch_is_shared_over_ranks_and_accumulation():
    assert per_rank_batch({"global_batch_size": 64, "batch_size": 7, "accumulate": 1}, 2) == 32
    assert per_rank_batch({"global_batch_size": 64, "batch_size": 7, "accumulate": 2}, 4) == 8
    assert per_rank_batch({"global_batch_size": 0, "batch_size": 7, "accumulate": 1}, 4) == 7  # per rank, as before


def test_a_global_batch_the_ranks_cannot_share_is_an_error_naming_the_fix(ddpx_here):
    with pytest.raises(UserError, match="choose --nproc among 1, 2, 4, 8"):
        per_rank_batch({"global_batch_size": 64, "batch_size": 7, "accumulate": 1}, 3)
    with pytest.raises(UserError, match="fixed --nnodes"):
        per_rank_batch({"global_batch_size": 64, "batch_size": 7, "accumulate": 1}, 2, elastic=True)
    result = ddpx_here("recipe", TINY, "train.global_batch_size=64", "--nproc", "3", "--tracking", "none")
    assert result.returncode == 2 and "does not split evenly over 3 rank(s)" in result.stderr
    assert result.run_dirs() == []


@pytest.mark.slow
def test_one_and_two_ranks_take_the_same_steps_of_the_same_samples(job_here, tmp_path):
    checkpoints = {}
    for nproc in (1, 2):
        folder = tmp_path / f"ranks{nproc}"
        folder.mkdir()
        job_here(TINY, "train.global_batch_size=64", "train.max_epochs=2", nproc=nproc, cwd=folder)
        [last] = folder.glob("ddpx-runs/*/checkpoints/last.pt")
        checkpoints[nproc] = torch.load(last, map_location="cpu", weights_only=False)
    one, two = checkpoints[1], checkpoints[2]
    assert one["steps_per_epoch"] == two["steps_per_epoch"] == 19  # 1 200 training samples, 64 a step
    assert one["global_step"] == two["global_step"] == 38
    assert (one["batch_size"], two["batch_size"]) == (64, 32)  # each rank's share of the 64
    for checkpoint in (one, two):  # the run records the global and the per-rank batch
        assert checkpoint["recipe"]["train"]["global_batch_size"] == 64
