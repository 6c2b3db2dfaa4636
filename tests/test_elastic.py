"""An elastic torchrun job (``--nnodes 1:2``) on two "machines" of this one: when the machine of
rank 0 leaves mid-run, the other goes on alone from the checkpoint that rank 0 wrote (on the
storage they share, found through the note in its own run folder) and finishes the same MLflow run."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import TEST_PLUGINS, TEST_RECIPES
from test_resume import one_run
from test_signals_and_nodes import free_port
from torch.distributed import TCPStore

from ddpx.launch.signals import rank_processes

pytestmark = pytest.mark.slow  # starts two torchrun agents and their ranks

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def start_machine(workdir, runs, port, env, tracking_uri, experiment):
    workdir.mkdir()
    with (workdir / "stderr.txt").open("w") as stderr:  # the machine's own copy stays open
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
                "last_call_timeout=5,is_host=false",  # the test holds the rendezvous store, so either may leave
                "--run-dir",
                str(runs),  # storage the machines share, as a cluster's
                "--tracking-uri",
                tracking_uri,
                "--experiment",
                experiment,
                "train.max_epochs=3",
            ],
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )


def read_lines(machines):
    """Each machine's output lines as they come, as (name, line) on one queue; (name, None) at its end."""
    lines = queue.Queue()

    def read(name, process):
        for line in process.stdout:
            lines.put((name, line))
        lines.put((name, None))

    for name, process in machines.items():
        threading.Thread(target=read, args=(name, process), daemon=True).start()
    return lines


def test_an_elastic_job_goes_on_alone_when_rank_0s_machine_leaves(tmp_path, tracking_uri, experiment):
    port, go_on = free_port(), tmp_path / "go-on"
    env = {
        **os.environ,
        "PYTHONPATH": str(TEST_PLUGINS),
        "DDPX_PLUGINS": "ddpx_testplug_pause",
        "DDPX_TEST_PAUSE_AFTER": "1",
        "DDPX_TEST_GO_ON": str(go_on),
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    # The rendezvous store is the test's, as a cluster's can be (is_host=false on both), and both machines start at
    # once, so both join the first rendezvous within its last call (one started later can miss it on a busy
    # machine). torchrun orders machines by their agents' pids: whichever holds rank 0 leaves, the other stays. The
    # one left has no checkpoint of its own: rank 0 wrote last.pt in its run folder, which the other noted.
    store = TCPStore("127.0.0.1", port, is_master=True, multi_tenant=True, wait_for_workers=False)  # noqa: F841
    runs = tmp_path / "shared-runs"
    machines = {name: start_machine(tmp_path / name, runs, port, env, tracking_uri, experiment) for name in "ab"}
    lines, said = read_lines(machines), {"a": [], "b": []}
    while True:  # rank 0 pauses after its checkpoint of epoch 1, on 2 ranks
        name, line = lines.get(timeout=300)
        assert line is not None, f"machine {name} ended before the pause: {said[name]}"
        said[name].append(line)
        if "paused after epoch 1" in line:
            assert "of 2 rank(s)" in line, f"the job began without one of the machines: {line}"
            break
    leaving = machines.pop(name)
    name, staying = machines.popitem()
    ranks = rank_processes(leaving.pid)  # rank 0's machine leaves: its rank (in a session torchrun made for
    assert len(ranks) == 1  # it), its torchrun agent and its CLI, all at once
    os.kill(ranks[0], signal.SIGKILL)
    os.killpg(leaving.pid, signal.SIGKILL)
    leaving.wait()
    go_on.touch()
    assert staying.wait(timeout=180) == 0, (tmp_path / name / "stderr.txt").read_text()
    while (got := lines.get(timeout=10)) != (name, None):
        said[got[0]].append(got[1] or "")
    stdout = "".join(said[name])
    assert "continuing on 1 rank(s) a checkpoint of 2" in stdout, stdout
    assert "Traceback" not in stdout
    [finished] = [folder for folder in runs.iterdir() if (folder / "summary.json").is_file()]
    left = Path(json.loads((finished / "rank0.json").read_text())["run_dir"])  # where the machine that left wrote
    assert left.parent == runs and left != finished
    assert f"resuming from {left / 'checkpoints' / 'last.pt'}: 1 epoch(s) done" in stdout, stdout
    client, run = one_run(tracking_uri, experiment)
    assert run.info.status == "FINISHED" and "ddpx.error" not in run.data.tags
    assert run.data.params["nnodes"] == "1:2" and run.data.params["world_size"] == "2"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "dev_accuracy")] == [1, 2, 3]
    assert run.data.metrics["heldout_accuracy"] > 0.5
