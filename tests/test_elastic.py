"""An elastic torchrun job (``--nnodes 1:2``) on two "machines" of this one: when one machine
leaves mid-run, the other goes on alone from the last checkpoint and finishes the same run."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import TEST_PLUGINS, TEST_RECIPES
from test_resume import one_run
from test_signals_and_nodes import free_port

from ddpx.launch.signals import rank_processes

pytestmark = pytest.mark.slow  # starts two torchrun agents and their ranks

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def wait_for_listener(port: int, seconds: float = 60) -> None:
    """Wait until the first machine's torchrun agent holds the rendezvous store on ``port``, so
    that it hosts the store and, started first, takes rank 0 (torchrun orders machines by pid)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail(f"no rendezvous store on port {port} after {seconds} s")


def start_machine(workdir, port, env, tracking_uri, experiment):
    workdir.mkdir()
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ddpx",
            "recipe",
            TINY,
            "--launcher",
            "torchrun",
            "--nnodes",
            "1:2",
            "--nproc",
            "1",
            "--max-restarts",
            "1",
            "--rdzv-endpoint",
            f"127.0.0.1:{port}",
            "--rdzv-conf",
            "last_call_timeout=5",
            "--tracking-uri",
            tracking_uri,
            "--experiment",
            experiment,
            "train.max_epochs=3",
        ],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_an_elastic_job_goes_on_alone_when_the_other_machine_leaves(tmp_path, tracking_uri, experiment):
    port, go_on = free_port(), tmp_path / "go-on"
    env = {
        **os.environ,
        "PYTHONPATH": str(TEST_PLUGINS),
        "DDPX_PLUGINS": "ddpx_testplug_pause",
        "DDPX_TEST_PAUSE_AFTER": "1",
        "DDPX_TEST_GO_ON": str(go_on),
        "DDPX_LOG_MODEL": "false",
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    first = start_machine(tmp_path / "first", port, env, tracking_uri, experiment)
    wait_for_listener(port)
    second = start_machine(tmp_path / "second", port, env, tracking_uri, experiment)
    for line in first.stdout:  # rank 0 (on the first machine) has checkpointed epoch 1 of 2 ranks
        if "paused after epoch 1" in line:
            break
    leaving = rank_processes(second.pid)  # the second machine leaves: its rank (in a session torchrun made for
    assert len(leaving) == 1  # it), its torchrun agent and its CLI, all at once
    os.kill(leaving[0], signal.SIGKILL)
    os.killpg(second.pid, signal.SIGKILL)
    second.wait()
    go_on.touch()
    stdout, stderr = first.communicate(timeout=180)
    assert first.returncode == 0, stderr
    assert "continuing on 1 rank(s) a checkpoint of 2" in stdout, stdout
    assert "Traceback" not in stdout
    client, run = one_run(tracking_uri, experiment)
    assert run.info.status == "FINISHED" and "ddpx.error" not in run.data.tags
    assert run.data.params["nnodes"] == "1:2" and run.data.params["world_size"] == "2"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "dev_accuracy")] == [1, 2, 3]
    assert run.data.metrics["heldout_accuracy"] > 0.5
