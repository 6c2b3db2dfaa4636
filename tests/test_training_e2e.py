"""End to end: real spawn and torchrun jobs on CPU/gloo, read back from a real MLflow store."""

import json
import re
import subprocess

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import TEST_RECIPES, orphans
from mlflow.tracking import MlflowClient

from ddpx.contract.cpu_threads import cpu_share
from ddpx.plugins.launchers.spawn import SOCKET_SUFFIX

pytestmark = pytest.mark.slow  # every test here starts ranks

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def only_run(uri, experiment):
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1, "one MLflow run per job, never one per rank"
    return client, runs[0]


@pytest.mark.parametrize("launcher, nproc", [("spawn", None), ("torchrun", 3)])  # 3 ranks: an uneven world
def test_launchers_run_the_job_and_log_one_mlflow_run(run_ddpx, tracking_uri, experiment, launcher, nproc, tmp_path):
    args = [
        "recipe",
        TINY,
        "--launcher",
        launcher,
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        "train.lr=0.05",
    ]
    if nproc:
        args += ["--nproc", str(nproc)]
    temp = tmp_path / "temp"
    temp.mkdir()
    kernels = {"ATEN_CPU_CAPABILITY": "default"} if launcher == "torchrun" else {}  # torch's plainest CPU kernels
    # OMP_DISPLAY_ENV: torch's OpenMP library prints what it read as each process loads it
    result = run_ddpx(*args, env={"TMPDIR": str(temp), "OMP_DISPLAY_ENV": "VERBOSE", **kernels})
    assert result.returncode == 0, result.output
    world = nproc or 2  # the default on a machine without GPUs
    # idle threads sleep at once rather than spin (a busy machine's cores go to the working threads;
    # without OMP_WAIT_POLICY libgomp spins 300000 times first): in the fork server the ranks fork
    # from, or in torchrun and each of its ranks (their output in launcher.log)
    read = result.stderr if launcher == "spawn" else (result.run_dirs()[0] / "launcher.log").read_text()
    server = len(str(temp).encode()) <= 107 - SOCKET_SUFFIX  # else the spawn method: each rank loads torch
    displays = (1 if server else world) if launcher == "spawn" else 1 + world
    assert re.findall(r"GOMP_SPINCOUNT = '(\d+)'", read) == ["0"] * displays, read[-2000:]
    assert f"on {world} rank(s), launcher {launcher}, backend gloo" in result.stdout
    assert result.stdout.count("epoch 1/3") == 1, "only rank 0 prints"
    assert "done: tiny_mlp" in result.stdout and "heldout_accuracy" in result.stdout

    client, run = only_run(tracking_uri, experiment)
    assert run.info.status == "FINISHED"
    params = run.data.params
    assert params["train.lr"] == "0.05" and params["train.batch_size"] == "32" and params["model.name"] == "mlp"
    assert params["dataset.n_classes"] == "8" and params["task"] == "mlp_synthetic"
    assert (params["launcher"], params["world_size"], params["backend"], params["device"]) == (
        launcher,
        str(world),
        "gloo",
        "cpu",
    )
    assert params["global_batch_size"] == str(32 * world) and params["precision"] == "fp32"
    tags = run.data.tags
    assert tags["ddpx.recipe"] == "tiny_mlp" and tags["ddpx.version"] and "ddpx==" in tags["ddpx.plugins"]
    assert tags["ddpx.torch"] == torch.__version__ and tags["ddpx.threads_per_rank"] == str(cpu_share(world))
    assert tags["ddpx.cpu_kernels"] == ("DEFAULT" if kernels else torch.backends.cpu.get_cpu_capability())

    for key in ("train_loss", "dev_loss", "dev_accuracy", "samples_per_s", "epoch_s"):
        history = client.get_metric_history(run.info.run_id, key)
        assert [m.step for m in history] == [1, 2, 3], key
    metrics = run.data.metrics
    assert not {"batch_s", "forward_s", "backward_s", "optimizer_s"} & set(metrics), "phases are timed when asked"
    assert 0.5 < metrics["heldout_accuracy"] <= 1.0 and metrics["heldout_loss"] > 0
    assert metrics["heldout_samples"] == 301 and 1 <= metrics["best_epoch"] <= 3
    assert sorted(a.path for a in client.list_artifacts(run.info.run_id)) == [
        "heldout_confusion_matrix.csv",
        "heldout_confusion_matrix.png",
        "heldout_predictions.csv",
        "heldout_reliability.png",
        "model",
        "recipe.toml",
    ]
    assert metrics["heldout_nll"] == pytest.approx(metrics["heldout_loss"], rel=1e-5)  # the held-out cross-entropy
    # the top-label ECE (10 equal bins of the predicted class's probability) and the 90 % sets' coverage,
    # by hand from the run's own predictions file
    answers = pd.read_csv(result.run_dirs()[0] / "reports" / "heldout_predictions.csv", keep_default_na=False)
    probabilities = answers[[c for c in answers if c.startswith("probability_")]].to_numpy()
    top, correct = probabilities.max(1), probabilities.argmax(1) == answers["target"].to_numpy()
    bins = np.minimum((top * 10).astype(int), 9)
    gaps = [abs(correct[bins == b].sum() - top[bins == b].sum()) for b in range(10)]
    assert metrics["heldout_ece"] == pytest.approx(sum(gaps) / len(top), rel=1e-5, abs=1e-6)
    held = [str(t) in words.split("|") for t, words in zip(answers["target"], answers["set"])]
    assert metrics["heldout_coverage_90"] == pytest.approx(np.mean(held), abs=1e-6)

    summary = result.summary()
    assert summary["run_id"] == run.info.run_id
    assert summary["heldout"]["heldout_accuracy"] == pytest.approx(metrics["heldout_accuracy"])

    ckpt_dir = result.run_dirs()[0] / "checkpoints"
    for name in ("last.pt", "best.pt"):
        state = torch.load(ckpt_dir / name, weights_only=True)
        assert not any(k.startswith("module.") for k in state["model"])
        assert {"optimizer", "epoch", "rng", "recipe"} <= set(state)
        assert state["tracking_run_id"] == run.info.run_id
    assert torch.load(ckpt_dir / "best.pt", weights_only=True)["epoch"] == summary["best_epoch"]
    assert orphans(result.marker) == []
    assert not list(temp.glob("torchelastic_*")), "torchrun's folders belong in the run folder, not in TMPDIR"
    if launcher == "torchrun":  # one folder per rank of the first attempt
        attempt = next((result.run_dirs()[0] / "torchrun-logs").glob("*/attempt_0"))
        assert sorted(p.name for p in attempt.iterdir()) == [str(rank) for rank in range(world)]


def test_time_phases_and_profile_steps_say_where_the_training_steps_go(run_ddpx, tracking_uri, experiment):
    """Both diagnostics in one job (each reads its own records): the phases of every epoch, and a
    trace of three of rank 0's steps into the run folder and MLflow."""
    result = run_ddpx(
        "recipe", TINY, "--nproc", "2", "--tracking-uri", tracking_uri, "--experiment", experiment,
        "train.time_phases=true", "train.accumulate=2", "train.profile_steps=3",
    )  # fmt: skip
    assert result.returncode == 0, result.output
    client, run = only_run(tracking_uri, experiment)
    phases = ("batch_s", "forward_s", "backward_s", "optimizer_s")
    for key in phases:
        assert [m.step for m in client.get_metric_history(run.info.run_id, key)] == [1, 2, 3], key
    lines = [json.loads(line) for line in (result.run_dirs()[0] / "metrics.jsonl").read_text().splitlines()]
    epochs = [row for row in lines if "epoch_s" in row]
    assert len(epochs) == 3
    for row in epochs:
        assert all(row[key] > 0 for key in phases), row
        assert sum(row[key] for key in phases) < row["epoch_s"], "the phases are parts of the epoch"
        assert row["forward_s"] + row["backward_s"] > row["optimizer_s"], row  # a step per two micro-batches
    assert result.stdout.count(" forward ") == 3 and " backward " in result.stdout and " optimizer " in result.stdout

    folder = result.run_dirs()[0] / "profile"
    trace = json.loads((folder / "trace.json").read_text())
    steps = sorted({e["name"] for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")})
    assert steps == ["ProfilerStep#7", "ProfilerStep#8", "ProfilerStep#9"], "3 steps after 7 of warm-up"
    names = {e.get("name") for e in trace["traceEvents"]}
    assert {"aten::addmm", "c10d::allreduce_"} <= names, "the forward and DDP's all-reduce are in the trace"
    ops = (folder / "ops.txt").read_text()
    assert ops.startswith("3 training steps traced on rank 0 after 7; per step: ") and "aten::addmm" in ops
    assert f"profile of 3 training steps: {folder / 'trace.json'}" in result.stdout
    assert result.stdout.count("profile of") == 1, "rank 0 alone profiles"
    assert sorted(a.path for a in client.list_artifacts(run.info.run_id, "profile")) == [
        "profile/ops.txt",
        "profile/trace.json",
    ]


def test_default_recipe_gets_close_to_its_ceiling_in_the_default_store(run_ddpx, tmp_path):
    from ddpx.plugins.mlp_synthetic import bayes_accuracy

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "notes.txt").write_text("an experiment folder under git\n")
    subprocess.run([*git, "-C", str(tmp_path), "add", "notes.txt"], check=True)
    subprocess.run([*git, "-C", str(tmp_path), "commit", "-qm", "start"], check=True)
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()

    result = run_ddpx("recipe", "mlp_synthetic", "train.max_epochs=4", fresh_store=True)
    assert result.returncode == 0, result.output
    assert (tmp_path / "mlflow.db").is_file(), "MLflow's own default store, in the working directory"
    client, run = only_run(f"sqlite:///{tmp_path / 'mlflow.db'}", "mlp_synthetic")
    experiment = client.get_experiment(run.info.experiment_id)  # named after the recipe, in the model-training view
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    accuracy = run.data.metrics["heldout_accuracy"]
    ceiling = bayes_accuracy(0.03, 32)
    assert accuracy > 0.9 > 1 / 32  # far above chance
    assert accuracy == pytest.approx(ceiling, abs=0.02)  # and within sampling noise of the ceiling
    assert "mlflow ui --backend-store-uri" in result.stdout
    assert run.data.tags["mlflow.source.git.commit"] == head


def test_parameters_are_identical_on_every_rank_from_the_start(run_ddpx, monkeypatch):
    import ddpx_testplug_rank_params as plugin

    monkeypatch.setenv("RANK", "0")
    first = plugin.build({"dim_hidden": 32, "n_layers": 2}, {"dim_in": 64, "n_classes": 8})
    monkeypatch.setenv("RANK", "1")
    second = plugin.build({"dim_hidden": 32, "n_layers": 2}, {"dim_in": 64, "n_classes": 8})
    assert not torch.equal(first.net[0].weight, second.net[0].weight), "the test model really differs per rank"

    result = run_ddpx(
        "recipe",
        TINY,
        "--nproc",
        "3",
        "--tracking",
        "none",
        "model.name=rank_seeded_mlp",
        "train.max_epochs=1",
        plugins=("ddpx_testplug_rank_params",),
    )
    assert result.returncode == 0, result.output
    run_dir = result.run_dirs()[0]
    states = [torch.load(run_dir / f"start-params-rank{r}.pt", weights_only=True) for r in range(3)]
    for state in states[1:]:
        assert state.keys() == states[0].keys()
        assert all(torch.equal(state[k], states[0][k]) for k in state)
    # the spawn launcher shares the cores out before the ranks import torch, as torchrun does
    share = cpu_share(3)
    for r in range(3):
        threads = json.loads((run_dir / f"threads-rank{r}.json").read_text())
        assert threads == {"torch": share, "OMP_NUM_THREADS": str(share)}


@pytest.mark.parametrize("launcher", ["spawn", "torchrun"])
def test_one_failing_rank_ends_the_job_with_its_traceback_once(run_ddpx, tracking_uri, experiment, launcher):
    result = run_ddpx(
        "recipe",
        TINY,
        "--launcher",
        launcher,
        "--nproc",
        "3",
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        "task=failing_on_rank1",
        plugins=("ddpx_testplug_failing",),
    )
    assert result.returncode == 1, result.output
    assert result.output.count("deliberate failure on rank 1") == 1
    assert result.output.count("Traceback (most recent call last)") == 1
    assert "the job failed on rank 1" in result.stderr
    assert orphans(result.marker) == [], "no orphan processes"
    experiment_record = MlflowClient(tracking_uri).get_experiment_by_name(experiment)
    if experiment_record is not None:  # rank 0 may be stopped before it opened a run: then there is none
        _, run = only_run(tracking_uri, experiment)
        assert run.info.status == "FAILED"


def test_a_crash_mid_training_marks_the_run_failed_with_its_error(run_ddpx, tracking_uri, experiment):
    """Rank 1 crashes at the end of epoch 2 while rank 0 still records it (its tracker is slow
    there): the launcher's stop waits for that record, so epoch 2 is kept."""
    result = run_ddpx(
        "recipe",
        TINY,
        "--tracking",
        "mlflow_slow",
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        plugins=("ddpx_testplug_failing",),
        env={"DDPX_TEST_FAIL_AT_EPOCH": "2"},
    )
    assert result.returncode == 1, result.output
    assert result.output.count("deliberate crash on rank 1 after epoch 2") == 1
    client, run = only_run(tracking_uri, experiment)
    assert run.info.status == "FAILED"
    assert "deliberate crash on rank 1 after epoch 2" in run.data.tags["ddpx.error"]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train_loss")] == [1, 2]


def test_rank_0_killed_while_logging_an_epoch_leaves_the_epoch_in_the_failed_run(run_ddpx, tracking_uri, experiment):
    """The epoch is in the run folder's metrics.jsonl before the tracker takes it: closing the
    failed run, ddpx logs what the tracker missed."""
    result = run_ddpx(
        "recipe",
        TINY,
        "--tracking",
        "mlflow_killed",
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        plugins=("ddpx_testplug_failing",),
        env={"DDPX_TEST_KILL_AT_EPOCH": "2"},
    )
    assert result.returncode == 1, result.output
    assert "rank 0 was killed by SIGKILL" in result.stderr
    client, run = only_run(tracking_uri, experiment)
    assert run.info.status == "FAILED"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train_loss")] == [1, 2]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "dev_accuracy")] == [1, 2]
