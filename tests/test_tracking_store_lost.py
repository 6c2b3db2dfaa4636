"""A real MLflow server killed in the middle of a run: training goes on, nothing is lost, the run
ends with exit 3 and the command that completes its record; ``ddpx upload`` finishes the same
MLflow run once the server is back, or records the run folder in another store."""

import json
import os
import signal
import subprocess
import sys

import pytest
from conftest import TEST_PLUGINS, TEST_RECIPES, copy_of_new_store, store_template
from mlflow.tracking import MlflowClient
from mlflow_server import mlflow_server

pytestmark = pytest.mark.slow  # starts ranks and MLflow servers

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def train_while_the_server_dies(uri, workdir):
    """Train 3 epochs; after epoch 1 (logged) the server is SIGKILLed. Returns the finished job."""
    go_on = workdir / "go-on"
    env = {
        **os.environ,
        "PYTHONPATH": str(TEST_PLUGINS),
        "DDPX_PLUGINS": "ddpx_testplug_pause",
        "DDPX_TEST_PAUSE_AFTER": "1",
        "DDPX_TEST_GO_ON": str(go_on),
        "DDPX_SYSTEM_METRICS": "false",
        "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "0",
    }  # less waiting
    env.pop("MLFLOW_TRACKING_URI", None)
    job = subprocess.Popen(
        [sys.executable, "-m", "ddpx", "recipe", TINY, "--nproc", "1", "--tracking-uri", uri, "train.max_epochs=3"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in job.stdout:
        if "paused after epoch 1" in line:
            break
    os.killpg(uri.process.pid, signal.SIGKILL)
    uri.process.wait()
    go_on.touch()
    stdout, stderr = job.communicate(timeout=180)
    return subprocess.CompletedProcess(job.args, job.returncode, stdout, stderr)


def test_a_server_killed_mid_run_loses_nothing_and_upload_finishes_the_same_run(ddpx_here, tmp_path, tmp_path_factory):
    server_home, workdir = tmp_path / "server", tmp_path / "work"
    server_home.mkdir(), workdir.mkdir()
    with mlflow_server(server_home) as uri:
        job = train_while_the_server_dies(uri, workdir)
    assert job.returncode == 3, job.stderr
    (run_dir,) = (workdir / "ddpx-runs").iterdir()
    assert f"record it with `ddpx upload {run_dir}`" in job.stderr
    assert [line.startswith("Error:") for line in job.stderr.splitlines()].count(True) == 1
    assert "Traceback" not in job.stdout + job.stderr
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 3, "every epoch kept in the run folder"

    with mlflow_server(server_home) as uri:  # the same store, back on another port
        client = MlflowClient(uri)
        (partial,) = client.search_runs([client.get_experiment_by_name("tiny_mlp").experiment_id])
        assert partial.info.status == "RUNNING"  # what the server was left with
        assert [m.step for m in client.get_metric_history(partial.info.run_id, "dev_accuracy")] == [1]
        uploaded = ddpx_here("upload", str(run_dir), "--tracking-uri", uri)
        assert uploaded.returncode == 0, uploaded.output
        (run,) = client.search_runs([partial.info.experiment_id])
        assert run.info.run_id == partial.info.run_id and run.info.status == "FINISHED"
        assert [m.step for m in client.get_metric_history(run.info.run_id, "dev_accuracy")] == [1, 2, 3]
        summary = json.loads((run_dir / "summary.json").read_text())
        assert run.data.metrics["heldout_accuracy"] == summary["heldout"]["heldout_accuracy"]
        assert "ddpx.error" not in run.data.tags

    # another store has no run of this folder: a new run gets all of it
    fresh = copy_of_new_store(store_template(tmp_path_factory), tmp_path, "fresh.db")  # new and empty
    again = ddpx_here("upload", str(run_dir), "--tracking-uri", fresh, "--register", "tiny_from_elsewhere")
    assert again.returncode == 0, again.output
    client = MlflowClient(fresh, registry_uri=fresh)
    (copy,) = client.search_runs([client.get_experiment_by_name("tiny_mlp").experiment_id])
    (version,) = client.search_model_versions("name='tiny_from_elsewhere'")
    assert int(version.version) == 1 and version.run_id == copy.info.run_id  # models:/tiny_from_elsewhere/1
    assert copy.info.status == "FINISHED" and copy.data.params["train.lr"] == "0.1"
    assert [m.step for m in client.get_metric_history(copy.info.run_id, "dev_accuracy")] == [1, 2, 3]
    assert {a.path for a in client.list_artifacts(copy.info.run_id)} >= {
        "recipe.toml",
        "heldout_confusion_matrix.png",
        "model",
    }
    missing = ddpx_here("upload", str(tmp_path / "nowhere"), "--tracking-uri", fresh)
    assert missing.returncode == 2 and "is not a finished ddpx run folder" in missing.stderr
