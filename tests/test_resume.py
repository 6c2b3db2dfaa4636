"""Resuming: a preempted run, a torchrun restart and a checkpoint given by path continue to the
weights of a run that nothing interrupted; bad checkpoints are refused."""

import subprocess
import sys

import pytest
import torch
from mlflow.tracking import MlflowClient

from conftest import TEST_RECIPES

pytestmark = pytest.mark.slow  # every test here starts ranks

TINY = str(TEST_RECIPES / "tiny_mlp.toml")
EPOCHS = "train.max_epochs=4"


def final_weights(result):
    (run_dir,) = result.run_dirs()
    return torch.load(run_dir / "checkpoints" / "last.pt", weights_only=True)["model"]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The weights of a run that nothing interrupted (same seed, same recipe)."""
    workdir = tmp_path_factory.mktemp("uninterrupted")
    subprocess.run([sys.executable, "-m", "ddpx", "recipe", TINY, "--tracking", "none", EPOCHS], cwd=workdir,
                   check=True, capture_output=True)
    (run_dir,) = (workdir / "ddpx-runs").iterdir()
    return torch.load(run_dir / "checkpoints" / "last.pt", weights_only=True)["model"]


def assert_same_weights(a, b):
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a), "resumed weights differ from the uninterrupted run's"


def one_run(uri, experiment):
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    return client, run


def test_preempted_run_resumes_in_the_same_mlflow_run_with_identical_weights(run_ddpx, tracking_uri, experiment,
                                                                              uninterrupted):
    args = ("recipe", TINY, "--tracking-uri", tracking_uri, "--experiment", experiment, EPOCHS,
            "train.stop_check_every=5")
    inject = dict(plugins=("ddpx_testplug_preempt",), env={"DDPX_TEST_SIGNAL_AT": "1:25:USR1"})
    stopped = run_ddpx(*args, **inject)  # SIGUSR1 reaches rank 1 only, at step 6 of epoch 2
    assert stopped.returncode == 75, stopped.output
    # the check at step 10 carries the request (its all-reduce overlaps training); the next, at 15, reads it
    assert "stopped on request 15 step(s) into epoch 2" in stopped.stderr and "--resume auto" in stopped.stderr
    assert "Traceback" not in stopped.output
    client, run = one_run(tracking_uri, experiment)
    assert run.info.status == "RUNNING"

    resumed = run_ddpx(*args, "--resume", "auto", **inject)
    assert resumed.returncode == 0, resumed.output
    assert "resuming from" in resumed.stdout and "1 epoch(s) done, 15 step(s) into epoch 2" in resumed.stdout
    assert len(resumed.run_dirs()) == 1, "continued in the same run folder"
    assert_same_weights(final_weights(resumed), uninterrupted)
    client, again = one_run(tracking_uri, experiment)
    assert again.info.run_id == run.info.run_id and again.info.status == "FINISHED"
    for key in ("train_loss", "dev_accuracy"):
        assert [m.step for m in client.get_metric_history(run.info.run_id, key)] == [1, 2, 3, 4]


def test_torchrun_restarts_a_killed_worker_and_resumes(run_ddpx, tracking_uri, experiment, uninterrupted):
    result = run_ddpx("recipe", TINY, "--launcher", "torchrun", "--max-restarts", "1", "--tracking-uri", tracking_uri,
                      "--experiment", experiment, EPOCHS, plugins=("ddpx_testplug_preempt",),
                      env={"DDPX_TEST_SIGNAL_AT": "1:25:KILL"})
    assert result.returncode == 0, result.output
    assert "resuming from" in result.stdout
    assert_same_weights(final_weights(result), uninterrupted)
    client, run = one_run(tracking_uri, experiment)
    assert run.info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train_loss")] == [1, 2, 3, 4]


def test_resume_from_a_path_and_bad_checkpoints(run_ddpx, tmp_path, uninterrupted):
    first = run_ddpx("recipe", TINY, "--tracking", "none", "train.max_epochs=2", cwd=tmp_path)
    assert first.returncode == 0, first.output
    checkpoint = first.run_dirs()[0] / "checkpoints" / "last.pt"
    later = tmp_path / "later"
    later.mkdir()
    continued = run_ddpx("recipe", TINY, "--tracking", "none", EPOCHS, "--resume", str(checkpoint), cwd=later)
    assert continued.returncode == 0, continued.output
    assert "2 epoch(s) done" in continued.stdout
    assert_same_weights(final_weights(continued), uninterrupted)

    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(checkpoint.read_bytes()[:100])
    bad = run_ddpx("recipe", TINY, "--tracking", "none", "--resume", str(corrupt), cwd=later)
    assert bad.returncode == 2 and "corrupt, truncated" in bad.stderr and "Traceback" not in bad.output
    foreign = run_ddpx("recipe", TINY, "--tracking", "none", "model.dim_hidden=32", "--resume", str(checkpoint), cwd=later)
    assert foreign.returncode == 2 and "written for another model" in foreign.stderr  # caught before launch
    assert len(list((later / "ddpx-runs").iterdir())) == 1

    checkpoint.write_bytes(b"not a checkpoint")  # --resume auto never silently starts afresh
    auto = run_ddpx("recipe", TINY, "--tracking", "none", "--resume", "auto", cwd=tmp_path)
    assert auto.returncode == 2 and "cannot be read safely" in auto.stderr  # found before launch
