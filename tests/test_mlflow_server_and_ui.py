"""A sweep and a recipe tracked by a real ``mlflow server``, read back through its API, through
``ddpx runs``, and in MLflow's own UI in Debian's chromium (headless, driven by Playwright); and
jobs started at the same moment into one new experiment.

The screenshots are kept in ``$DDPX_TEST_ARTIFACTS`` (default ``test-artifacts/`` in the
repository) for a person to look at.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import TEST_RECIPES
from mlflow_server import mlflow_server

TINY = str(TEST_RECIPES / "tiny_mlp.toml")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(os.environ.get("DDPX_TEST_ARTIFACTS", Path(__file__).parent.parent / "test-artifacts"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with mlflow_server(tmp_path_factory.mktemp("mlflow-server")) as uri:
        yield uri


@pytest.fixture(scope="module")
def tracked(server, tmp_path_factory):
    """One recipe run and one two-trial sweep, both tracked by the server."""
    import subprocess
    import sys

    from conftest import TEST_PLUGINS

    workdir = tmp_path_factory.mktemp("work")
    path = os.pathsep.join(filter(None, [str(TEST_PLUGINS), os.environ.get("PYTHONPATH")]))  # as run_ddpx
    env = dict(os.environ, MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL="1", COLUMNS="200", PYTHONPATH=path)
    env["DDPX_LOG_MODEL"] = "true"  # the run's page links its logged model
    env.pop("MLFLOW_TRACKING_URI", None)

    def ddpx(*args):
        return subprocess.Popen(
            [sys.executable, "-m", "ddpx", *args, "--tracking-uri", server, "--experiment", "ui"],
            cwd=workdir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    # the run and the sweep at once, as two users of one server would
    started = (
        ddpx("recipe", TINY, "train.max_epochs=1", "train.lr=0.2", "train.log_every_n_steps=5"),
        ddpx("sweep", TINY, "train.lr=0.05,0.1", "train.max_epochs=1", "--no-log-model", "--nproc", "1"),
    )
    outputs = [p.communicate(timeout=300) for p in started]
    single, sweep = (subprocess.CompletedProcess(p.args, p.returncode, *out) for p, out in zip(started, outputs))
    assert single.returncode == 0, single.stdout + single.stderr
    assert sweep.returncode == 0, sweep.stdout + sweep.stderr
    from mlflow.tracking import MlflowClient

    client = MlflowClient(server)
    experiment = client.get_experiment_by_name("ui")
    runs = client.search_runs([experiment.experiment_id])
    parent = next(r for r in runs if r.data.tags.get("ddpx.sweep") == "parent")
    trials = sorted(
        (r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id),
        key=lambda r: int(r.data.tags["ddpx.sweep.trial"]),
    )
    return dict(
        client=client,
        experiment_id=experiment.experiment_id,
        runs=runs,
        parent=parent,
        trials=trials,
        sweep_output=sweep.stdout,
        single_output=single.stdout,
        env=env,
        workdir=workdir,
    )


@pytest.mark.slow
def test_sweep_nests_its_trials_and_records_the_best(tracked):
    parent, trials = tracked["parent"], tracked["trials"]
    assert len(tracked["runs"]) == 4 and len(trials) == 2
    assert [t.data.params["train.lr"] for t in trials] == ["0.05", "0.1"]
    assert parent.info.status == "FINISHED" and all(t.info.status == "FINISHED" for t in trials)
    assert parent.data.params["sweep.keys"] == "train.lr" and parent.data.params["sweep.train.lr"] == "0.05,0.1"
    # the best trial is the one with the best dev metric; the parent records its held-out metric
    dev = [max(m.value for m in tracked["client"].get_metric_history(t.info.run_id, "dev_accuracy")) for t in trials]
    best = trials[dev.index(max(dev))]
    assert parent.data.metrics["best_trial"] == float(best.data.tags["ddpx.sweep.trial"])
    assert parent.data.metrics["best_heldout_accuracy"] == best.data.metrics["heldout_accuracy"]
    assert "best trial on the dev metric" in tracked["sweep_output"]


@pytest.mark.slow
def test_every_run_records_params_artifacts_dataset_and_system_metrics(tracked, tmp_path):
    client = tracked["client"]
    children = [r for r in tracked["runs"] if r.data.tags.get("ddpx.sweep") != "parent"]
    for run in children:
        params = run.data.params
        for name in ("train.lr", "train.batch_size", "world_size", "global_batch_size", "task", "model.name"):
            assert name in params
        assert params["global_batch_size"] == str(int(params["train.batch_size"]) * int(params["world_size"]))
        assert any(name.startswith("system/cpu_utilization") for name in run.data.metrics)
        assert any(name.startswith("system/system_memory") for name in run.data.metrics)
        (dataset_input,) = run.inputs.dataset_inputs
        dataset = dataset_input.dataset
        assert dataset.name == "mlp_synthetic" and len(dataset.digest) == 16
        assert json.loads(dataset.profile) == {"train": 1200, "dev": 300, "heldout": 301}
        top = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"recipe.toml", "heldout_confusion_matrix.png", "heldout_predictions.csv", "model"} <= top
    # the single run logged its loss and learning rate every 5 optimizer steps (19 steps per epoch)
    single = next(r for r in children if "ddpx.sweep.trial" not in r.data.tags)
    losses = client.get_metric_history(single.info.run_id, "step/train_loss")
    assert [m.step for m in losses] == [5, 10, 15] and all(0 < m.value < 10 for m in losses)
    assert {m.value for m in client.get_metric_history(single.info.run_id, "step/lr")} == {0.2}
    experiment = client.get_experiment(tracked["experiment_id"])  # opens in MLflow's model-training view
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    assert single.data.tags["ddpx.metric"] == "heldout_accuracy" and single.data.tags["ddpx.metric_direction"] == "max"
    # the best model's artifacts rebuild a model that predicts what the run reported
    import pandas as pd
    import torch

    from ddpx.api import load_model
    from ddpx.plugins.mlp_synthetic.data import make_splits

    run = children[0]
    folder = Path(client.download_artifacts(run.info.run_id, "model", str(tmp_path)))
    model = load_model(folder)
    csv_path = Path(client.download_artifacts(run.info.run_id, "heldout_predictions.csv", str(tmp_path)))
    rows = csv_path.read_text().splitlines()
    header = "index,target,predicted,probability," + ",".join(f"probability_{k}" for k in range(8))  # its 8 classes
    assert rows[0] == header + ",set" and len(rows) == 1 + 301  # then its 90 % conformal set
    assert model.training is False
    logged = run.data.params  # the run's held-out split, drawn again here from its logged dataset params
    sizes = {k: int(logged[f"dataset.{k}"]) for k in ("train_size", "dev_size", "heldout_size", "dim_in", "n_classes")}
    shape = {k: float(logged[f"dataset.{k}"]) for k in ("class_sep", "label_noise")}
    inputs, targets = make_splits({**sizes, **shape}, seed=int(logged["train.seed"])).heldout.tensors
    with torch.no_grad():
        probabilities = torch.softmax(model(inputs).double(), dim=1).numpy()
    table = pd.read_csv(csv_path, keep_default_na=False)
    assert (table["target"].to_numpy() == targets.numpy()).all()
    assert (table["predicted"].to_numpy() == probabilities.argmax(1)).all()
    assert table[[f"probability_{k}" for k in range(8)]].to_numpy() == pytest.approx(probabilities, abs=1e-5)


# One job's tracker, started when every process is ready (the ready files are the barrier), so
# that all of them look the new experiment up at the same moment.
START_AT_ONCE = """
import sys, time
from pathlib import Path
from ddpx.api import Job, LaunchSettings
from ddpx.plugins.trackers.mlflow import MlflowTracker
import mlflow.tracking, mlflow.entities
uri, folder, index, count = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
settings = LaunchSettings(tracking_uri=uri, experiment="started-at-once", system_metrics=False)
tracker = MlflowTracker(Job(recipe_name="r", recipe_source="r.toml", config={}, launch=settings))
(folder / f"ready-{index}").touch()
while len(list(folder.glob("ready-*"))) < count:
    time.sleep(0.001)
tracker.start(run_name=f"job-{index}", params={"index": index}, tags={})
tracker.finish("FINISHED")
print(tracker.experiment_id)
"""


def test_jobs_started_at_once_all_land_in_the_new_experiment(server, tmp_path):
    import subprocess
    import sys

    from mlflow.tracking import MlflowClient

    count = 6
    started = [
        subprocess.Popen(
            [sys.executable, "-c", START_AT_ONCE, server, str(tmp_path), str(i), str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(count)
    ]
    outputs = [p.communicate(timeout=120) for p in started]
    assert all(p.returncode == 0 for p in started), [err[-600:] for _, err in outputs]
    experiment = MlflowClient(server).get_experiment_by_name("started-at-once")
    assert {out.split()[-1] for out, _ in outputs} == {experiment.experiment_id}
    runs = MlflowClient(server).search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in runs) == [f"job-{i}" for i in range(count)]


@pytest.mark.slow
def test_ddpx_runs_lists_the_server_runs(tracked, server, ddpx_here):
    out = ddpx_here("runs", "--tracking-uri", server, "--experiment", "ui", "--sort", "heldout_accuracy", "--json")
    assert out.returncode == 0, out.stderr
    listing = json.loads(out.stdout)
    trials = [r for r in listing["runs"] if r["sweep"].startswith("trial")]
    assert len(listing["runs"]) == 4 and len(trials) == 2
    values = [r["metrics"]["heldout_accuracy"] for r in listing["runs"] if "heldout_accuracy" in r["metrics"]]
    assert values == sorted(values, reverse=True)
    table = ddpx_here("runs", "--tracking-uri", server, "--experiment", "ui")
    assert table.returncode == 0 and "train.lr" in table.stdout and "heldout_accuracy" in table.stdout
    # the experiment's link: the same saved view, best first, as the one printed after a run
    view_link = tracked["single_output"].split("Every run of ui, best first: ")[1].split()[0]
    assert (
        view_link.startswith(f"{server}/#/experiments/{tracked['experiment_id']}/runs?") and view_link in table.stdout
    )


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if os.environ.get("DDPX_REQUIRE_BROWSER"):
            pytest.fail("chromium is not installed; .ci/run installs Debian's chromium package")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        chromium.close()


# MLflow's compare page draws metric names and values as two virtualised grids whose cells
# line up by their `top` offset: read the values in the same row as the metric's name.
METRIC_VALUES_JS = """(name) => {
  const link = [...document.querySelectorAll('a')].find(a => a.textContent.trim() === name);
  const row = link.closest('div[style*="top"]');
  const grids = [...document.querySelectorAll('.ReactVirtualized__Grid')];
  const values = grids[grids.indexOf(link.closest('.ReactVirtualized__Grid')) + 1];
  return [...values.querySelectorAll('div[style*="top"]')].filter(d => d.style.top === row.style.top)
    .map(d => d.innerText.trim());
}"""


def _screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


# The runs list is a grid whose cells carry their column's id; read it row by row, top to bottom.
GRID_ROWS_JS = """() => {
  const rows = {};
  for (const cell of document.querySelectorAll('[role=gridcell][col-id]')) {
    const index = cell.closest('[role=row]').getAttribute('row-index');
    (rows[index] = rows[index] || {})[cell.getAttribute('col-id')] = cell.innerText.trim();
  }
  return Object.keys(rows).sort((a, b) => a - b).map(key => rows[key]);
}"""


@pytest.mark.slow
def test_the_experiment_link_lists_every_run_best_first_with_the_metric_and_the_swept_param(tracked, browser):
    link = tracked["single_output"].split("Every run of ui, best first: ")[1].split()[0]
    assert "workflowType=machine_learning" in link and "viewStateShareKey=" in link
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.goto(link)
    metric, lr = "metrics.`heldout_accuracy`", "params.`train.lr`"
    page.locator(f'[role=gridcell][col-id="{metric}"]').first.wait_for(timeout=60_000)
    page.get_by_text(tracked["parent"].info.run_name).first.wait_for(timeout=30_000)
    # without a click more: the held-out metric and the swept param are columns, every run best first
    for key, title in ((metric, "heldout_accuracy"), (lr, "train.lr")):
        assert page.locator(f'[role=columnheader][col-id="{key}"]').first.inner_text().strip() == title
    shown = [(row[metric], row[lr]) for row in page.evaluate(GRID_ROWS_JS) if row.get(metric, "-") != "-"]
    scored = sorted(
        (r for r in tracked["runs"] if "heldout_accuracy" in r.data.metrics),
        key=lambda r: -r.data.metrics["heldout_accuracy"],
    )
    assert len(scored) == 3 and [float(value) for value, _ in shown] == [
        r.data.metrics["heldout_accuracy"] for r in scored
    ]
    assert [param for _, param in shown] == [r.data.params["train.lr"] for r in scored]
    assert page.get_by_text("Judges", exact=True).count() == 0  # the model-training view, not GenAI's
    _screenshot(page, "mlflow-runs-page.png")
    page.close()


@pytest.mark.slow
def test_ui_compare_page_shows_differing_params_and_heldout_metric(tracked, server, browser):
    trials = tracked["trials"]
    runs = json.dumps([t.info.run_id for t in trials], separators=(",", ":"))
    page = browser.new_page(viewport={"width": 1600, "height": 2400})
    page.goto(
        f"{server}/#/compare-runs?runs={runs}&experiments={json.dumps([tracked['experiment_id']])}"
        "&workflowType=machine_learning"
    )  # as `ddpx runs` prints it
    page.get_by_text("Comparing 2 Runs").wait_for(timeout=60_000)
    params_row = page.locator("tr").filter(has=page.get_by_text("train.lr", exact=True)).last
    params_row.wait_for(timeout=30_000)
    assert {"0.05", "0.1"} <= set(params_row.inner_text().split())
    page.get_by_text("heldout_accuracy", exact=True).first.wait_for(timeout=30_000)
    shown = page.evaluate(METRIC_VALUES_JS, "heldout_accuracy")  # the metric's row in the values grid
    assert shown == [f"{t.data.metrics['heldout_accuracy']:.3f}".rstrip("0").rstrip(".") for t in trials]
    params_row.scroll_into_view_if_needed()
    _screenshot(page, "mlflow-compare-page.png")
    page.close()


@pytest.mark.slow
def test_the_link_printed_after_a_run_opens_its_result_in_the_model_training_view(tracked, server, browser):
    link = tracked["single_output"].split("The run in MLflow: open ")[1].split()[0]
    assert link.startswith(f"{server}/#/experiments/{tracked['experiment_id']}/runs/")
    single = next(
        r for r in tracked["runs"] if "ddpx.sweep" not in r.data.tags and "ddpx.sweep.trial" not in r.data.tags
    )
    value = f"{single.data.metrics['heldout_accuracy']:.4f}"
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    page.goto(link)
    note = page.get_by_text(f"heldout_accuracy {value}").first
    note.wait_for(timeout=60_000)  # the run's note: the held-out result, without a click
    assert note.is_visible() and note.bounding_box()["y"] < 1000  # on the first screen
    logged = page.locator("a[href*='/models/m-']").first  # "Logged models": the best model, a link to it
    logged.wait_for(timeout=30_000)
    assert logged.is_visible() and logged.inner_text().strip() == "model"
    # the model-training view: its sidebar (Runs, Models), not GenAI's (Judges, Evaluations, Prompts)
    assert page.get_by_text("Models", exact=True).first.is_visible()
    assert (
        page.get_by_text("Judges", exact=True).count() == 0 and page.get_by_text("Evaluations", exact=True).count() == 0
    )
    _screenshot(page, "mlflow-run-page.png")
    page.close()
