"""``ddpx sweep --parallel 2``: two trials at once, each in its own process on its own share of
the cores, nested under one parent run and told to one Optuna study; a SIGTERM stops them all."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest
from conftest import TEST_RECIPES, orphans
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow  # runs trials side by side

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def trial_runs(tracking_uri, experiment):
    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    parent = next(r for r in runs if r.data.tags.get("ddpx.sweep") == "parent")
    return parent, {int(r.data.tags["ddpx.sweep.trial"]): r for r in runs if r is not parent}


def test_a_search_runs_two_trials_at_once_each_on_its_own_cores(run_ddpx, tmp_path, tracking_uri, experiment):
    import optuna

    storage, meeting = f"sqlite:///{tmp_path / 'study.db'}", tmp_path / "meeting"
    meeting.mkdir()
    result = run_ddpx(
        "sweep",
        TINY,
        "train.lr=loguniform(0.01,0.3)",
        "train.max_epochs=2",
        "--search",
        "optuna",
        "--trials",
        "3",
        "--sampler",
        "random",
        "--search-seed",
        "3",
        "--pruner",
        "none",
        "--parallel",
        "2",
        "--nproc",
        "1",
        "--study-storage",
        storage,
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        timeout=300,
        plugins=("ddpx_testplug_meet",),
        env={"DDPX_TEST_MEET": str(meeting)},
    )
    assert result.returncode == 0, result.output
    assert "3 trial(s) on 1 rank(s) each, 2 at once" in result.stdout
    (summary,) = optuna.get_all_study_summaries(storage)
    trials = optuna.load_study(study_name=summary.study_name, storage=storage).trials
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3

    parent, runs = trial_runs(tracking_uri, experiment)
    assert parent.info.status == "FINISHED" and parent.data.params["sweep.parallel"] == "2"
    assert sorted(runs) == [1, 2, 3] and all(r.info.status == "FINISHED" for r in runs.values())
    # each trial's training waited for another's to start (ddpx_testplug_meet): none trained alone
    assert sorted(f.read_text() for f in meeting.glob("*.job")) == ["met"] * 3, "trials 1 and 2 ran at once"

    cores = {}
    for number, run in runs.items():
        log = (tmp_path / "ddpx-runs" / run.info.run_name / "trial.log").read_text()
        cores[number] = re.search(r"on CPU core\(s\) ([\d,]+)", log).group(1)
        assert "epoch 2/2" in log, log  # rank 0's output is in the trial's own log
    if len(os.sched_getaffinity(0)) >= 2:
        assert cores[1] != cores[2], "the two trials at once share no core"


def test_sigterm_to_a_parallel_sweep_stops_every_trial(tmp_path, tracking_uri, experiment):
    marker = uuid.uuid4().hex
    env = {**os.environ, "DDPX_TEST_MARKER": marker, "DDPX_SYSTEM_METRICS": "false"}
    env.pop("MLFLOW_TRACKING_URI", None)
    sweep = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ddpx",
            "sweep",
            TINY,
            "train.lr=0.05,0.1",
            "train.max_epochs=500",
            "--parallel",
            "2",
            "--nproc",
            "1",
            "--tracking-uri",
            tracking_uri,
            "--experiment",
            experiment,
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # as in the background of a script
    started = 0
    for line in sweep.stdout:
        started += "started, CPU core(s)" in line or "started, OMP" in line
        if started == 2:
            break
    logs = lambda: [p.read_text() for p in (tmp_path / "ddpx-runs").glob("*/trial.log")]  # noqa: E731
    while sum("epoch 1/500" in text for text in logs()) < 2:  # both trials train
        assert sweep.poll() is None, sweep.stderr.read()
        time.sleep(0.1)
    sweep.send_signal(signal.SIGTERM)
    _, stderr = sweep.communicate(timeout=120)
    assert sweep.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert orphans(marker) == [], "no trial process or rank outlives the sweep"
    parent, runs = trial_runs(tracking_uri, experiment)
    assert parent.info.status == "KILLED"
    statuses = {number: run.info.status for number, run in runs.items()}
    assert statuses == {1: "KILLED", 2: "KILLED"}, (statuses, logs())
    outcomes = [json.loads(p.read_text()) for p in (tmp_path / "ddpx-runs").glob("*/trial-outcome.json")]
    assert [o["exit_code"] for o in outcomes] == [130, 130], "each trial stopped its ranks itself, none was killed"
