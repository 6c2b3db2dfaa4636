"""Stopping and continuing without losing anything: preemption, restarts, resume, Ctrl-C, hangs."""

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import torch
from mlflow.tracking import MlflowClient

from conftest import TEST_PLUGINS, TEST_RECIPES, processes_with_marker

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
    assert auto.returncode == 1 and "cannot be read safely" in auto.stderr


@pytest.mark.parametrize("launcher, stop", [("spawn", signal.SIGINT), ("torchrun", signal.SIGTERM)],
                         ids=["spawn-ctrl-c", "torchrun-sigterm"])
def test_ctrl_c_or_sigterm_stops_every_rank_and_marks_the_run_killed(tmp_path, tracking_uri, experiment, launcher,
                                                                    stop):
    """Ctrl-C, or a scheduler's SIGTERM to the ddpx process alone: no rank trains on."""
    marker = uuid.uuid4().hex
    env = {**os.environ, "DDPX_TEST_MARKER": marker, "PYTHONPATH": str(TEST_PLUGINS)}
    env.pop("MLFLOW_TRACKING_URI", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "ddpx", "recipe", "mlp_synthetic", "--launcher", launcher, "--tracking-uri",
         tracking_uri, "--experiment", experiment, "train.max_epochs=50", "train.patience=0"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in process.stdout:  # wait until training is under way
        if "epoch 1/50" in line:
            break
    process.send_signal(stop)
    start = time.monotonic()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert time.monotonic() - start < 30
    assert "interrupted; every rank was stopped" in stderr
    assert processes_with_marker(marker) == [], "no orphan processes"
    _, run = one_run(tracking_uri, experiment)
    assert run.info.status == "KILLED"


def test_a_rank_killed_by_sigkill_is_named_as_the_jobs_error(tmp_path, tracking_uri, experiment):
    """(A resumed run sheds that error: tests/test_mlflow_tracker.py.)"""
    marker = uuid.uuid4().hex
    env = {**os.environ, "DDPX_TEST_MARKER": marker, "DDPX_LOG_MODEL": "false", "DDPX_SYSTEM_METRICS": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    args = [sys.executable, "-m", "ddpx", "recipe", TINY, "--tracking-uri", tracking_uri, "--experiment", experiment,
            "train.max_epochs=12", "dataset.train_size=3000"]
    process = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in process.stdout:  # wait until training is under way
        if "epoch 1/12" in line:
            break
    # the spawn launcher starts local ranks 0 and 1 in that order: rank 1 is the later process
    ranks = sorted(pid for pid in processes_with_marker(marker)
                   if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes())
    assert len(ranks) == 2
    os.kill(ranks[1], signal.SIGKILL)
    _, stderr = process.communicate(timeout=90)
    assert process.returncode == 1, stderr
    assert "rank 1 was killed by SIGKILL" in stderr and "Traceback" not in stderr, stderr
    assert processes_with_marker(marker) == [], "no orphan processes"
    client, run = one_run(tracking_uri, experiment)
    assert run.info.status == "FAILED" and "rank 1 was killed by SIGKILL" in run.data.tags["ddpx.error"]


def test_a_hanging_rank_ends_the_job_within_the_timeout(run_ddpx):
    start = time.monotonic()
    result = run_ddpx("recipe", TINY, "--tracking", "none", "--timeout", "5", plugins=("ddpx_testplug_hang",),
                      timeout=120)
    assert result.returncode == 1
    assert time.monotonic() - start < 60
    assert processes_with_marker(result.marker) == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("launcher", ["torchrun", "spawn"])
def test_two_nodes_on_one_machine_form_one_world(tmp_path, tracking_uri, experiment, launcher):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(TEST_PLUGINS)}
    env.pop("MLFLOW_TRACKING_URI", None)
    if launcher == "torchrun":
        extra = lambda node: ["--rdzv-endpoint", f"127.0.0.1:{port}", "--node-rank", str(node)]  # noqa: E731
    else:
        extra = lambda node: ["--node-rank", str(node), "--master-addr", "127.0.0.1", "--master-port", str(port)]  # noqa: E731
    nodes = []
    for node in (0, 1):
        workdir = tmp_path / f"node{node}"
        workdir.mkdir()
        nodes.append(subprocess.Popen(
            [sys.executable, "-m", "ddpx", "recipe", TINY, "--launcher", launcher, "--nnodes", "2", "--nproc", "1",
             "--tracking-uri", tracking_uri, "--experiment", experiment, *extra(node)],
            cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [node.communicate(timeout=240) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    _, run = one_run(tracking_uri, experiment)  # created by global rank 0 only
    assert run.data.params["world_size"] == "2" and run.data.params["nnodes"] == "2"


def _agree_on_a_stop(rank: int, port: int, out_dir: str) -> None:
    """One rank of a gloo world of two: rank 1 steps twice as slowly and is asked to stop at step 40."""
    import json

    import torch.distributed as dist

    from ddpx.rank import signals

    signals.CHECK_SECONDS = 0.2  # keep the test short: intervals of about 0.2 s of the slowest rank's steps
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    stops = signals.StopRequests(every=0)
    intervals, agreed_at = [], None
    for step in range(1, 400):
        time.sleep(0.002 * (rank + 1))
        if rank == 1 and step == 40:
            stops.requested = True
        if stops.agreed(step, torch.device("cpu")):
            agreed_at = step
            break
        intervals.append(stops.every)
    dist.destroy_process_group()
    stops.restore()
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps({"agreed_at": agreed_at, "intervals": intervals}))


def test_ranks_space_their_stop_checks_alike_and_stop_at_the_same_step(tmp_path):
    import json

    import torch.multiprocessing as mp

    mp.spawn(_agree_on_a_stop, args=(free_port(), str(tmp_path)), nprocs=2)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0] == ranks[1], "both ranks check at the same steps and stop at the same one"
    intervals = ranks[0]["intervals"]
    assert intervals[0] == 10  # untimed: the first interval
    # then about 0.2 s of the slower rank's 2 ms+ steps (sleep overshoots; never the faster rank's 1 ms)
    assert 40 <= intervals[-1] <= 100, intervals[-1]
    assert 40 < ranks[0]["agreed_at"] < 400
