"""The model wrappers (``train.wrapper``) and ``train.check_sync`` on real gloo process groups; the
``ddp`` run in a real terminal, as a user sees it (the live progress bar prints no warning)."""

import pytest
import torch
from conftest import TEST_RECIPES, JobFolder, orphans, run_in_terminal

pytestmark = pytest.mark.slow  # every test here starts ranks

TINY = str(TEST_RECIPES / "tiny_mlp.toml")
SHORT = ("train.max_epochs=2", "--tracking", "none")


def last_weights(result):
    (run_dir,) = result.run_dirs()
    return torch.load(run_dir / "checkpoints" / "last.pt", weights_only=True)["model"]


def test_allreduce_and_ddp_reach_the_same_weights(job_here, tmp_path):
    (tmp_path / "ddp").mkdir(), (tmp_path / "allreduce").mkdir()
    # the ddp run in a real terminal (a pseudo-terminal, so rich draws its live progress bar)
    shown = run_in_terminal(["recipe", TINY, *SHORT, "train.wrapper=ddp"], tmp_path / "ddp")
    assert "epoch 2/2" in shown and "done" in shown, shown
    assert "requires_grad" not in shown and "Warning" not in shown and "warn" not in shown.lower(), shown
    ddp = JobFolder(tmp_path / "ddp")
    hand_made = job_here(
        TINY, "train.max_epochs=2", "train.wrapper=allreduce", "train.check_sync=true", cwd=tmp_path / "allreduce"
    )  # raises if the job failed
    a, b = last_weights(ddp), last_weights(hand_made)
    assert a.keys() == b.keys() and not any(k.startswith("module.") for k in b)
    for key in a:  # 2 ranks x 75 steps: the averaged gradients agree to the last bit
        assert torch.allclose(a[key], b[key], rtol=0, atol=1e-6), key
    assert ddp.summary()["heldout"] == hand_made.summary()["heldout"]


def test_check_sync_names_the_first_parameter_that_differs(run_ddpx):
    result = run_ddpx(
        "recipe",
        TINY,
        *SHORT,
        "train.check_sync=true",
        plugins=("ddpx_testplug_desync",),
        env={"DDPX_TEST_DESYNC": "net.2.weight"},
    )
    assert result.returncode == 1
    assert "after step 1 of epoch 1 the ranks hold different values of parameter 'net.2.weight'" in result.stderr
    assert result.stderr.count("the ranks hold different values") == 1  # one error shown, not one per rank
    assert orphans(result.marker) == []


def test_dp_is_one_process_and_says_so(job_here, ddpx_here):
    refused = ddpx_here("recipe", TINY, *SHORT, "train.wrapper=dp", "--nproc", "2")
    assert refused.returncode == 2 and "--nproc 1" in refused.stderr and "Traceback" not in refused.output
    assert refused.run_dirs() == []
    single = job_here(TINY, "train.max_epochs=2", "train.wrapper=dp", nproc=1)
    assert single.summary()["heldout"]["heldout_accuracy"] > 0.5
