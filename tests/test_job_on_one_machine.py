"""What a job does on its machine beyond training: a compiled model saved as plain weights, and two
jobs started at once on a new MLflow store (sockets only on loopback: test_resume.py)."""

import json
import subprocess

import pytest
import torch
from conftest import TEST_RECIPES
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow  # every test here starts ranks

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def test_compiled_model_trains_and_saves_plain_weights(job_here):
    result = job_here(
        TINY, "train.compile=true", "train.max_epochs=1", nproc=1, plugins=("ddpx_testplug_forward_probe",)
    )
    run_dir = result.run_dirs()[0]
    assert json.loads((run_dir / "forward-rank0.json").read_text())["compiled_graphs"] > 0  # it ran compiled
    state = torch.load(run_dir / "checkpoints" / "best.pt", weights_only=True)
    assert not any(k.startswith(("_orig_mod.", "module.")) for k in state["model"])
    assert state["recipe"]["train"]["compile"] is True


@pytest.mark.slow
def test_two_jobs_started_at_once_on_a_new_sqlite_store_are_both_recorded(tmp_path):
    import os
    import sys

    uri = f"sqlite:///{tmp_path / 'new.db'}"
    env = dict(os.environ, DDPX_SYSTEM_METRICS="false")
    env.pop("MLFLOW_TRACKING_URI", None)
    jobs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ddpx",
                "recipe",
                TINY,
                "--nproc",
                "1",
                "--tracking-uri",
                uri,
                "train.max_epochs=1",
                f"train.seed={seed}",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for seed in (1, 2)
    ]
    outputs = [job.communicate(timeout=180)[0] for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0], outputs
    assert not any("tracking failed" in out for out in outputs), outputs
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("tiny_mlp").experiment_id])
    assert sorted(r.data.params["train.seed"] for r in runs) == ["1", "2"]
    assert all(r.info.status == "FINISHED" for r in runs)


def test_a_full_disk_is_named_and_leaves_no_partial_checkpoint(run_ddpx, tmp_path):
    """A real full disk: a 64 KiB tmpfs holds the run folder, and the first checkpoint (about
    90 KiB) does not fit."""
    disk = tmp_path / "small-disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a small tmpfs needs root (CI runs as root): {mounted.stderr.strip()}")
    try:
        result = run_ddpx("recipe", TINY, "--nproc", "1", "--tracking", "none", "--run-dir", str(disk))
        assert result.returncode == 1, result.output
        assert "no space left on the device holding" in result.stderr and "checkpoint last.pt" in result.stderr
        assert "--run-dir" in result.stderr and "Traceback" not in result.stderr
        (run_dir,) = disk.iterdir()
        assert list(run_dir.rglob("*.tmp")) == [], "the partial checkpoint is removed"
    finally:
        subprocess.run(["umount", str(disk)], check=True)
