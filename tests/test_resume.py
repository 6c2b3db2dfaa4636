"""Resuming: a preempted run and a torchrun restart continue to the weights of a run that nothing
interrupted (watched while it runs: a one-node job listens on loopback only); a checkpoint given by
path continues on another number of ranks, inside its epoch; bad checkpoints are refused."""

import io
import json
import os
import subprocess
import sys
import time
import uuid

import pytest
import torch
from conftest import TEST_RECIPES, processes_with_marker
from mlflow.tracking import MlflowClient

from ddpx.plugins.mlp_synthetic.data import make_splits
from ddpx.plugins.mlp_synthetic.model import MLP
from ddpx.records.checkpoint_file import load_model_weights

pytestmark = pytest.mark.slow  # every test here starts ranks

TINY = str(TEST_RECIPES / "tiny_mlp.toml")
EPOCHS = "train.max_epochs=4"


def final_weights(result):
    (run_dir,) = result.run_dirs()
    return torch.load(run_dir / "checkpoints" / "last.pt", weights_only=True)["model"]


@pytest.fixture(scope="module")
def uninterrupted_job(tmp_path_factory):
    """A run that nothing interrupted (same seed, same recipe), and the sockets its processes
    listened on while it ran (seen every 0.1 s)."""
    import psutil

    workdir = tmp_path_factory.mktemp("uninterrupted")
    marker = uuid.uuid4().hex
    env = dict(os.environ, DDPX_TEST_MARKER=marker)
    job = subprocess.Popen(
        [sys.executable, "-m", "ddpx", "recipe", TINY, "--tracking", "none", EPOCHS],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    listening: set[tuple[str, int]] = set()
    while job.poll() is None:
        pids = set(processes_with_marker(marker))
        listening |= {
            (c.laddr.ip, c.laddr.port)
            for c in psutil.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.pid in pids
        }
        time.sleep(0.1)
    assert job.returncode == 0, job.stdout.read()
    (run_dir,) = (workdir / "ddpx-runs").iterdir()
    return torch.load(run_dir / "checkpoints" / "last.pt", weights_only=True)["model"], listening


@pytest.fixture(scope="module")
def uninterrupted(uninterrupted_job):
    """The weights of the run that nothing interrupted."""
    return uninterrupted_job[0]


def test_a_one_node_job_listens_on_loopback_only(uninterrupted_job):
    """The spawn launcher's rendezvous store and gloo's sockets: nothing of a one-node job is
    reachable on another interface (torchrun's agent store is documented in docs/launchers)."""
    import ipaddress

    listening = uninterrupted_job[1]
    assert len(listening) >= 2, listening  # the store and gloo's listener, seen while the job ran
    assert all(ipaddress.ip_address(ip).is_loopback for ip, _ in listening), listening


def assert_same_weights(a, b):
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a), "resumed weights differ from the uninterrupted run's"


def one_run(uri, experiment):
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    return client, run


def test_preempted_run_resumes_in_the_same_mlflow_run_with_identical_weights(
    run_ddpx, tracking_uri, experiment, uninterrupted
):
    args = (
        "recipe",
        TINY,
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        EPOCHS,
        "train.stop_check_every=5",
    )
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
    result = run_ddpx(
        "recipe",
        TINY,
        "--launcher",
        "torchrun",
        "--max-restarts",
        "1",
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        EPOCHS,
        plugins=("ddpx_testplug_preempt",),
        env={"DDPX_TEST_SIGNAL_AT": "1:25:KILL"},
    )
    assert result.returncode == 0, result.output
    assert "resuming from" in result.stdout
    assert_same_weights(final_weights(result), uninterrupted)
    client, run = one_run(tracking_uri, experiment)
    assert run.info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train_loss")] == [1, 2, 3, 4]


def heldout_in_this_process(weights) -> tuple[float, float]:
    """The accuracy and the cross-entropy of the tiny recipe's model with ``weights`` (a state dict
    file) over exactly its held-out split, in one process."""
    model = MLP(64, 8, 64, 3)
    load_model_weights(model, weights)
    data = make_splits(
        {
            "train_size": 1200,
            "dev_size": 300,
            "heldout_size": 301,
            "dim_in": 64,
            "n_classes": 8,
            "class_sep": 0.8,
            "label_noise": 0.03,
        },
        seed=0,
    )
    inputs, targets = data.heldout.tensors
    with torch.no_grad():
        logits = model.eval()(inputs)
    return (logits.argmax(1) == targets).double().mean().item(), torch.nn.functional.cross_entropy(
        logits, targets
    ).item()


def heldout_accuracy_in_this_process(weights) -> float:
    return heldout_in_this_process(weights)[0]


def test_a_checkpoint_of_3_ranks_resumes_by_path_on_2_and_bad_checkpoints_are_refused(run_ddpx, ddpx_here, tmp_path):
    first = run_ddpx(
        "recipe",
        TINY,
        "--nproc",
        "3",
        "--tracking",
        "none",
        EPOCHS,
        "train.stop_check_every=5",
        "train.lr_schedule=onecycle",
        plugins=("ddpx_testplug_preempt",),
        env={"DDPX_TEST_SIGNAL_AT": "1:16:USR1"},
        cwd=tmp_path,
    )  # 13 steps an epoch on 3 ranks
    assert first.returncode == 75 and "stopped on request 10 step(s) into epoch 2" in first.stderr, first.output
    checkpoint = first.run_dirs()[0] / "checkpoints" / "last.pt"
    later = tmp_path / "later"
    later.mkdir()
    continued = run_ddpx(
        "recipe",
        TINY,
        "--nproc",
        "2",
        "--tracking",
        "none",
        EPOCHS,
        "train.lr_schedule=onecycle",
        "train.eval_batch_size=64",
        "--resume",
        str(checkpoint),
        cwd=later,
    )  # 301 held out: 151 + 150
    assert continued.returncode == 0, continued.output
    assert "1 epoch(s) done, 10 step(s) into epoch 2" in continued.stdout
    assert "continuing on 2 rank(s) a checkpoint of 3: 13 optimizer steps per epoch there, 19 here" in continued.stdout
    epochs = [json.loads(line) for line in (continued.run_dirs()[0] / "metrics.jsonl").read_text().splitlines()]
    assert [e["epoch"] for e in epochs] == [2, 3, 4] and epochs[-1]["lr"] < 0.001, "one-cycle ends at the run's end"
    summary = continued.summary()
    accuracy, loss = heldout_in_this_process(continued.run_dirs()[0] / "model" / "state_dict.pt")
    assert summary["heldout"]["heldout_accuracy"] == accuracy and summary["heldout_samples"] == 301  # exact on 2 ranks
    assert summary["heldout"]["heldout_loss"] == pytest.approx(loss, rel=1e-5)
    assert summary["heldout"]["heldout_accuracy"] > 0.9

    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(checkpoint.read_bytes()[:100])
    bad = ddpx_here("recipe", TINY, "--tracking", "none", "--resume", str(corrupt), cwd=later)
    assert bad.returncode == 2 and "corrupt, truncated" in bad.stderr and "Traceback" not in bad.output
    foreign = ddpx_here(
        "recipe", TINY, "--tracking", "none", "model.dim_hidden=32", "--resume", str(checkpoint), cwd=later
    )
    assert foreign.returncode == 2 and "written for another model" in foreign.stderr  # caught before launch
    assert len(list((later / "ddpx-runs").iterdir())) == 1

    checkpoint.write_bytes(b"not a checkpoint")  # --resume auto never silently starts afresh
    auto = ddpx_here("recipe", TINY, "--tracking", "none", "--resume", "auto", cwd=tmp_path)
    assert auto.returncode == 2 and "cannot be read safely" in auto.stderr  # found before launch


def test_fsdp_trains_like_ddp_resumes_its_shards_on_3_ranks_and_exports_one_plain_model(
    run_ddpx, ddpx_here, tmp_path, uninterrupted, new_store
):
    import mlflow
    import pandas as pd

    store = new_store
    args = ("recipe", TINY, "train.wrapper=fsdp", "--tracking-uri", store, EPOCHS, "train.stop_check_every=5")
    inject = dict(
        plugins=("ddpx_testplug_preempt",), env={"DDPX_TEST_SIGNAL_AT": "1:25:USR1", "DDPX_LOG_MODEL": "true"}
    )
    stopped = run_ddpx(*args, **inject)
    assert stopped.returncode == 75 and "stopped on request 15 step(s) into epoch 2" in stopped.stderr, stopped.output
    (run_dir,) = stopped.run_dirs()
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["last-e1-s15.dcp", "last.pt"]

    resumed = run_ddpx(*args, "--nproc", "3", "--resume", "auto", **inject)
    assert resumed.returncode == 0, resumed.output
    assert "continuing on 3 rank(s) a checkpoint of 2" in resumed.stdout
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["last-e4-s0.dcp", "last.pt"]
    accuracy = resumed.summary()["heldout"]["heldout_accuracy"]
    assert accuracy == heldout_accuracy_in_this_process(run_dir / "model" / "state_dict.pt"), "exact, on the export"
    torch.save(uninterrupted, tmp_path / "ddp.pt")  # the same recipe's weights after 4 epochs with ddp
    assert abs(accuracy - heldout_accuracy_in_this_process(tmp_path / "ddp.pt")) <= 0.03, "the band ddp reaches"

    features = (
        make_splits(
            {
                "train_size": 1200,
                "dev_size": 300,
                "heldout_size": 301,
                "dim_in": 64,
                "n_classes": 8,
                "class_sep": 0.8,
                "label_noise": 0.03,
            },
            seed=0,
        )
        .heldout.tensors[0][:20]
        .numpy()
    )
    table = pd.DataFrame(features, columns=[f"x{i}" for i in range(64)])
    table.to_csv(tmp_path / "rows.csv", index=False)
    predicted = ddpx_here("predict", str(run_dir / "model"), str(tmp_path / "rows.csv"))
    assert predicted.returncode == 0, predicted.output
    by_cli = pd.read_csv(io.StringIO(predicted.stdout))
    mlflow.set_tracking_uri(store)
    (model,) = mlflow.search_logged_models(
        experiment_ids=[mlflow.get_experiment_by_name("tiny_mlp").experiment_id], output_format="list"
    )
    by_mlflow = mlflow.pyfunc.load_model(f"models:/{model.model_id}").predict(table)
    assert list(by_cli["predicted"]) == list(by_mlflow["predicted"])
    assert by_cli["probability"].to_numpy() == pytest.approx(by_mlflow["probability"].to_numpy(), abs=1e-6)
