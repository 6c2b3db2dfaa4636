"""``ddpx sweep`` (grid, failed trials, dry run) and ``ddpx runs`` on a local MLflow store."""

import json
from pathlib import Path

import pytest
from conftest import TEST_RECIPES, run_in_terminal
from mlflow.tracking import MlflowClient

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def test_dry_run_lists_the_grid_and_starts_nothing(ddpx_here):
    result = ddpx_here(
        "sweep", TINY, "train.lr=0.05,0.1,0.2", "model.dim_hidden=16,32", "train.max_epochs=1", "--dry-run"
    )
    assert result.returncode == 0, result.output
    printed = result.stdout.splitlines()
    assert f"ddpx sweep {TINY}: 6 trial(s), nothing started" in printed  # one line, however long the path
    assert "every trial also sets: train.max_epochs=1" in printed
    lines = [line for line in printed if line.startswith("│")]
    assert len(lines) == 6 and "0.2" in lines[-1] and "32" in lines[-1]
    assert result.run_dirs() == [] and not (result.cwd / "mlflow.db").exists()


def test_a_long_recipe_path_is_printed_whole_in_an_80_column_terminal(tmp_path):
    """Rich wraps what it prints to the terminal's width; a path must come out whole (the terminal
    folds the line, and a copy of it is still the path), however long the checkout's folder name."""
    recipe = tmp_path / ("a-checkout-folder-with-a-long-name-" * 4) / "tiny_mlp.toml"
    recipe.parent.mkdir()
    recipe.write_text(Path(TINY).read_text())
    text = run_in_terminal(["sweep", str(recipe), "train.lr=0.05,0.1", "--dry-run"], tmp_path, columns=80)
    assert f"ddpx sweep {recipe}: 2 trial(s), nothing started" in text.splitlines(), text


def test_a_bad_value_in_any_trial_is_an_error_before_anything_starts(ddpx_here):
    result = ddpx_here("sweep", TINY, "train.lr=0.1,-1")
    assert result.returncode == 2 and "train.lr" in result.stderr and "Traceback" not in result.output
    assert result.run_dirs() == []
    no_grid = ddpx_here("sweep", TINY, "train.lr=0.1")
    assert no_grid.returncode == 2 and "KEY=V1,V2" in no_grid.stderr


@pytest.mark.slow
def test_a_failed_trial_is_marked_failed_and_the_sweep_goes_on(run_ddpx, ddpx_here, tracking_uri, experiment):
    result = run_ddpx(
        "sweep",
        TINY,
        "task=failing_on_rank1,mlp_synthetic",
        "train.max_epochs=1",
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        "--no-system-metrics",
        plugins=("ddpx_testplug_failing",),
        env={"DDPX_SYSTEM_METRICS": "true"},
    )  # the flag wins
    assert result.returncode == 1, result.output
    assert "1 of 2 trial(s) failed: trial 1 (task=failing_on_rank1)" in result.stderr
    assert "done trial 2" in result.stdout and "Traceback" not in result.stdout
    [done] = [line for line in result.stdout.splitlines() if line.startswith("done trial 2")]
    assert "dev_accuracy" in done and "heldout" not in done  # while choosing, dev values only
    assert "FAILED trial 1 (task=failing_on_rank1): the job failed on rank 1" in result.stdout
    assert "RuntimeError: deliberate failure on rank 1" in result.stdout
    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    by_trial = {r.data.tags.get("ddpx.sweep.trial"): r for r in runs}
    parent = by_trial.pop(None)
    assert parent.info.status == "FAILED" and parent.data.metrics["trials_failed"] == 1
    assert by_trial["1"].info.status == "FAILED" and "deliberate failure" in by_trial["1"].data.tags["ddpx.error"]
    assert by_trial["2"].info.status == "FINISHED"
    assert parent.data.metrics["best_trial"] == 2
    assert parent.data.metrics["best_heldout_accuracy"] == by_trial["2"].data.metrics["heldout_accuracy"]
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in by_trial.values())
    assert not any(k.startswith("system/") for r in runs for k in r.data.metrics)  # --no-system-metrics

    listed = ddpx_here("runs", "--tracking-uri", tracking_uri, "--experiment", experiment, "--json")
    assert listed.returncode == 0, listed.output
    rows = json.loads(listed.stdout)["runs"]
    assert sorted(r["sweep"] for r in rows) == ["parent", "trial 1", "trial 2"]
    table = ddpx_here(
        "runs",
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        "--recipe",
        "tiny_mlp",
        "--sort",
        "heldout_accuracy",
        "--ascending",
        "--limit",
        "2",
    )
    assert table.returncode == 0 and "mlflow ui --backend-store-uri" in table.stdout
    shown = [line for line in table.stdout.splitlines() if line.startswith("│")]
    assert len(shown) == 2  # --limit
    assert f"{by_trial['2'].data.metrics['heldout_accuracy']:.4f}" in shown[0]  # the scored run first, its full value


def test_runs_explains_a_missing_store_experiment_or_metric(ddpx_here, tmp_path, new_store):
    missing = ddpx_here("runs", "--tracking-uri", f"sqlite:///{tmp_path / 'nothing.db'}")
    assert missing.returncode == 2 and "there is no MLflow store" in missing.stderr
    assert not (tmp_path / "nothing.db").exists()
    store = new_store  # a store that exists, without that experiment
    unknown = ddpx_here("runs", "--tracking-uri", store, "--experiment", "no-such-experiment")
    assert unknown.returncode == 2 and "there is no experiment 'no-such-experiment'" in unknown.stderr
    down = ddpx_here("runs", "--tracking-uri", "http://127.0.0.1:9")
    assert down.returncode == 2 and "no MLflow server answers at http://127.0.0.1:9" in down.stderr
    assert "Traceback" not in missing.output + unknown.output + down.output


@pytest.mark.slow
def test_an_optuna_search_prunes_a_poor_trial_on_every_rank_and_nests_its_trials(
    run_ddpx, ddpx_here, tracking_uri, experiment, tmp_path
):
    import optuna

    storage = f"sqlite:///{tmp_path / 'study.db'}"
    # lr 1e-4 barely moves in 2 epochs, lr 0.1 learns. Seed 0 draws 1e-4, 0.1, 1e-4; once two trials have
    # finished, the median pruner stops a trial behind their median at an epoch: trial 3, after epoch 1
    result = run_ddpx(
        "sweep",
        TINY,
        "train.lr=choice(0.1,0.0001)",
        "train.max_epochs=2",
        "--search",
        "optuna",
        "--trials",
        "3",
        "--sampler",
        "random",
        "--search-seed",
        "0",
        "--study-storage",
        storage,
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        timeout=300,
    )
    assert result.returncode == 0, result.output
    (summary,) = optuna.get_all_study_summaries(storage)
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    states = [t.state.name for t in study.trials]
    assert states == ["COMPLETE", "COMPLETE", "PRUNED"], states
    assert study.direction == optuna.study.StudyDirection.MAXIMIZE  # accuracy: greater is better
    assert study.best_trial.params["train.lr"] == 0.1

    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    by_trial = {r.data.tags.get("ddpx.sweep.trial"): r for r in runs}
    parent = by_trial.pop(None)
    assert (
        parent.data.params["sweep.search"] == "optuna" and parent.data.params["sweep.train.lr"] == "choice(0.1,0.0001)"
    )
    assert parent.data.tags["ddpx.best.train.lr"] == "0.1" and parent.info.status == "FINISHED"
    assert parent.data.metrics["trials_pruned"] == states.count("PRUNED")
    pictures = {a.path for a in client.list_artifacts(parent.info.run_id, "search")}
    assert pictures == {f"search/{name}.png" for name in ("optimization_history", "dev_curves", "param_importances")}
    for number, state in enumerate(states, start=1):
        run = by_trial[str(number)]
        history = [m.step for m in client.get_metric_history(run.info.run_id, "dev_accuracy")]
        if state == "PRUNED":
            assert run.info.status == "KILLED" and run.data.tags["ddpx.trial_state"] == "PRUNED"
            stopped = int(run.data.tags["ddpx.pruned_after_epoch"])
            assert history == list(range(1, stopped + 1)) and stopped < 2, "its curve, up to where every rank stopped"
            assert "heldout_accuracy" in run.data.metrics  # its best weights were still scored
        else:
            assert run.info.status == "FINISHED" and history == [1, 2]
    assert "pruned trial 3 (train.lr=0.0001)" in result.stdout and "stopped after epoch 1" in result.stdout

    listed = ddpx_here("runs", "--tracking-uri", tracking_uri, "--experiment", experiment, "--json")
    assert listed.returncode == 0, listed.output
    rows = json.loads(listed.stdout)["runs"]  # the study's trials grouped under its parent run
    assert sorted(r["sweep"] for r in rows) == ["parent", "trial 1", "trial 2", "trial 3"]
    assert sorted(r["status"] for r in rows if r["sweep"] != "parent") == ["FINISHED", "FINISHED", "PRUNED"]


@pytest.mark.slow
def test_a_search_stopped_mid_trial_resumes_and_ends_with_its_trials(tmp_path, tracking_uri, experiment):
    import os
    import signal
    import subprocess
    import sys

    import optuna

    storage = f"sqlite:///{tmp_path / 'study.db'}"
    args = [
        sys.executable,
        "-m",
        "ddpx",
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
        "1",
        "--pruner",
        "none",
        "--nproc",
        "1",
        "--study-storage",
        storage,
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
    ]
    env = {**os.environ, "DDPX_SYSTEM_METRICS": "false"}
    first = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    trial_one_done = False
    for line in first.stdout:  # stopped while trial 2 trains
        trial_one_done = trial_one_done or line.startswith("done trial 1")
        if trial_one_done and line.startswith("epoch 1/2"):
            first.send_signal(signal.SIGTERM)
            break
    _, stopped = first.communicate(timeout=120)
    assert first.returncode == 130
    assert "continue the search with the same command and --resume" in stopped, stopped
    assert "ddpx recipe" not in stopped, "the hint is the search's, not one trial's `ddpx recipe --resume auto`"

    resumed = subprocess.run([*args, "--resume"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    (summary,) = optuna.get_all_study_summaries(storage)
    trials = optuna.load_study(study_name=summary.study_name, storage=storage).trials
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "COMPLETE", "COMPLETE"]
    assert trials[2].params == trials[1].params, "the interrupted trial ran again with its values"
    assert trials[3].params != trials[0].params, "the resumed sampler does not draw the first values again"

    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("ddpx.sweep") == "parent"]  # one parent, continued
    assert parent.info.status == "FINISHED" and parent.data.metrics["trials_finished"] == 3
    assert sorted(r.data.tags["ddpx.sweep.trial"] for r in runs if r is not parent) == ["1", "2", "3", "4"]
