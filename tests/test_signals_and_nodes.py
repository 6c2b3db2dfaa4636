"""Stopping a job from outside — Ctrl-C, SIGTERM, SIGKILL, a hang — and two nodes on one machine:
every rank stops, nothing outlives the CLI, and the run records why."""

import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import TEST_PLUGINS, TEST_RECIPES, orphans
from test_resume import one_run

from ddpx.launch.signals import rank_processes

pytestmark = pytest.mark.slow  # every test here starts ranks

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def as_in_a_terminal() -> None:
    """SIGINT at its default, as in a terminal: a test run in the background (``pytest &``, a CI
    job) inherits SIGINT ignored, and so would the ddpx process."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def as_in_a_script() -> None:
    """SIGINT ignored, as for a job started in the background of a script (where a scheduler's
    SIGTERM comes from): torchrun and the ranks must still hear the SIGINT ddpx stops them with."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize(
    "launcher, stop, start_as",
    [("spawn", signal.SIGINT, as_in_a_terminal), ("torchrun", signal.SIGTERM, as_in_a_script)],
    ids=["spawn-ctrl-c", "torchrun-sigterm"],
)
def test_ctrl_c_or_sigterm_stops_every_rank_and_marks_the_run_killed(
    tmp_path, tracking_uri, experiment, launcher, stop, start_as
):
    """Ctrl-C, or a scheduler's SIGTERM to the ddpx process alone: no rank trains on."""
    marker = uuid.uuid4().hex
    env = {**os.environ, "DDPX_TEST_MARKER": marker, "PYTHONPATH": str(TEST_PLUGINS)}
    env.pop("MLFLOW_TRACKING_URI", None)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ddpx",
            "recipe",
            TINY,
            "--launcher",
            launcher,
            "--tracking-uri",
            tracking_uri,
            "--experiment",
            experiment,
            "train.max_epochs=500",
            "train.patience=0",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=start_as,
    )
    for line in process.stdout:  # under way (of 500 epochs: still running, however late this is read)
        if "epoch 1/500" in line:
            break
    process.send_signal(stop)
    start = time.monotonic()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert time.monotonic() - start < 30
    assert "interrupted; every rank was stopped" in stderr
    assert orphans(marker) == [], "no orphan processes"
    _, run = one_run(tracking_uri, experiment)
    assert run.info.status == "KILLED"


@pytest.mark.parametrize("launcher", ["spawn", "torchrun"])
def test_sigusr1_to_the_ddpx_process_checkpoints_every_rank_and_stops_for_a_resume(tmp_path, launcher):
    """A preemption notice sent to the ddpx process alone (as a cluster's grace signal is)."""
    marker = uuid.uuid4().hex
    env = {**os.environ, "DDPX_TEST_MARKER": marker}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ddpx",
            "recipe",
            TINY,
            "--launcher",
            launcher,
            "--tracking",
            "none",
            "train.max_epochs=500",
            "train.stop_check_every=5",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in process.stdout:  # under way (of 500 epochs: still running, however late this is read)
        if "epoch 1/500" in line:
            break
    process.send_signal(signal.SIGUSR1)
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == 75, stderr
    assert "stopped on request" in stderr and "--resume auto" in stderr and "Traceback" not in stderr
    (run_dir,) = (tmp_path / "ddpx-runs").iterdir()
    assert (run_dir / "checkpoints" / "last.pt").is_file()
    assert orphans(marker) == [], "no orphan processes"


def ranks_in_order(ddpx_pid: int) -> list[int]:
    """The pids of a job's ranks, by rank (found as ddpx finds them, ddpx.launch.signals): torchrun
    gives each its RANK at start; the spawn launcher starts local ranks 0 and 1 in that order, so
    rank 1 is the later process."""

    def rank_of(pid: int) -> int:
        found = re.search(rb"(?:^|\0)RANK=(\d+)\0", Path(f"/proc/{pid}/environ").read_bytes())
        return int(found.group(1)) if found else pid

    return sorted(rank_processes(ddpx_pid), key=rank_of)


@pytest.mark.parametrize("launcher", ["spawn", "torchrun"])
def test_a_rank_killed_by_sigkill_is_named_as_the_jobs_error(tmp_path, tracking_uri, experiment, launcher):
    """(A resumed run sheds that error: tests/test_mlflow_tracker.py.)"""
    marker = uuid.uuid4().hex
    env = {**os.environ, "DDPX_TEST_MARKER": marker, "DDPX_SYSTEM_METRICS": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    args = [
        sys.executable,
        "-m",
        "ddpx",
        "recipe",
        TINY,
        "--launcher",
        launcher,
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        "train.max_epochs=100",
        "dataset.train_size=3000",
    ]
    process = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in process.stdout:  # wait until training is under way
        if "epoch 1/100" in line:
            break
    ranks = ranks_in_order(process.pid)
    assert len(ranks) == 2
    os.kill(ranks[1], signal.SIGKILL)
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == 1, stderr
    assert "rank 1 was killed by SIGKILL" in stderr and "Traceback" not in stderr, stderr
    assert orphans(marker) == [], "no orphan processes"
    _client, run = one_run(tracking_uri, experiment)
    assert run.info.status == "FAILED" and "rank 1 was killed by SIGKILL" in run.data.tags["ddpx.error"]


def test_a_hanging_rank_is_reported_and_ends_the_job_within_the_timeout(run_ddpx):
    start = time.monotonic()
    result = run_ddpx(
        "recipe",
        TINY,
        "--tracking",
        "none",
        "--timeout",
        "6",
        "--stall-report",
        "2",
        plugins=("ddpx_testplug_hang",),
        timeout=120,
    )
    assert result.returncode == 1
    assert time.monotonic() - start < 60
    assert orphans(result.marker) == []
    # while it hangs, rank 0 reports where the ranks stand still: rank 1 in the plugin's hook, rank 0
    # in the first step's backward pass, where DDP waits for rank 1's gradients
    assert "ddpx: no progress on rank(s)" in result.stdout
    error = result.stderr[result.stderr.index("Before that, no progress on rank(s) 0, 1:") :]
    assert re.search(r"rank 1 \(pid \d+ on .+\): the plugins' ddpx_fit_start hooks, for \d+ s", error), error
    assert "rank 0 (pid" in error and "training epoch 1, step 1 (its batch, forward, and backward" in error
    assert "Traceback" not in error
    # the peer's timeout is named as such, with the fix: more --timeout, or stop on request and resume
    assert "A collective waited longer than the job's --timeout (6 s)" in result.stderr
    assert "--timeout SECONDS" in result.stderr and "SIGUSR1" in result.stderr and "--resume auto" in result.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_nodes_on_one_machine_form_one_world(tmp_path, tracking_uri, experiment):
    """Two spawn launchers, one per "machine"; torchrun's machines meet in tests/test_elastic.py."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(TEST_PLUGINS)}
    env.pop("MLFLOW_TRACKING_URI", None)
    nodes = []
    for node in (0, 1):
        workdir = tmp_path / f"node{node}"
        workdir.mkdir()
        nodes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ddpx",
                    "recipe",
                    TINY,
                    "--nnodes",
                    "2",
                    "--nproc",
                    "1",
                    "--tracking-uri",
                    tracking_uri,
                    "--experiment",
                    experiment,
                    "--node-rank",
                    str(node),
                    "--master-addr",
                    "127.0.0.1",
                    "--master-port",
                    str(port),
                ],
                cwd=workdir,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = [node.communicate(timeout=240) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    _, run = one_run(tracking_uri, experiment)  # created by global rank 0 only
    assert run.data.params["world_size"] == "2" and run.data.params["nnodes"] == "2"


def test_ranks_space_their_stop_checks_alike_and_stop_at_the_same_step(tmp_path):
    import json

    import torch.multiprocessing as mp
    from stop_agreement import agree_on_a_stop  # a light module: each spawned process imports it

    mp.spawn(agree_on_a_stop, args=(free_port(), str(tmp_path)), nprocs=2)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0] == ranks[1], "both ranks check at the same steps and stop at the same one"
    intervals = ranks[0]["intervals"]
    assert intervals[0] == 10  # untimed: the first interval
    # then about 0.2 s of the slower rank's 2 ms+ steps (sleep overshoots; never the faster rank's 1 ms)
    assert 40 <= intervals[-1] <= 100, intervals[-1]
    assert 40 < ranks[0]["agreed_at"] < 400
