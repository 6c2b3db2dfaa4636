"""``ddpx runs`` as a user reads it: in a terminal 80, 100 and 120 columns wide, and piped.

The store is a real MLflow sqlite store holding runs of two recipes, written through MLflow's
client with the tags, params and metrics a ddpx run records (training them would add a minute
and nothing this test looks at).
"""

from __future__ import annotations

import json
import re
import time

import pytest
from conftest import run_in_terminal

BBBP = [  # (held-out ROC-AUC, train.lr, model.d_model); the best is the second
    (0.912345, "0.001", "128"),
    (0.947812, "0.003", "256"),
    (0.881234, "0.0003", "128"),
]
MLP = [(0.968123, "0.1"), (0.955555, "0.05")]
LONG_PATH = "/home/someone/projects/molecules/data/moleculenet/bbbp/BBBP-cleaned-2026.csv"


def record_run(client, experiment_id: str, recipe: str, metric: str, params: dict, value: float, minutes: float):
    run = client.create_run(
        experiment_id,
        run_name=f"{recipe}-20261123-1200{len(params)}{int(value * 1e4)}",
        tags={"ddpx.recipe": recipe, "ddpx.metric": metric, "ddpx.metric_direction": "max"},
    )
    for key, param in params.items():
        client.log_param(run.info.run_id, key, param)
    client.log_metric(run.info.run_id, metric, value)
    client.set_terminated(run.info.run_id, "FINISHED", end_time=run.info.start_time + int(minutes * 60_000))
    return run.info.run_id


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from conftest import copy_of_new_store, store_template
    from mlflow.tracking import MlflowClient

    folder = tmp_path_factory.mktemp("runs-store")
    uri = copy_of_new_store(store_template(tmp_path_factory), folder)
    client = MlflowClient(uri)
    bbbp = client.create_experiment("bbbp_rnn")
    for value, lr, width in BBBP:
        record_run(
            client,
            bbbp,
            "bbbp_rnn",
            "heldout_roc_auc",
            {
                "train.lr": lr,
                "model.d_model": width,
                "dataset.path": LONG_PATH,
                "train.batch_size": "32",
                "world_size": "2",
            },
            value,
            3.5,
        )
        time.sleep(0.01)
    mlp = client.create_experiment("mlp_synthetic")
    for value, lr in MLP:
        record_run(client, mlp, "mlp_synthetic", "heldout_accuracy", {"train.lr": lr, "world_size": "2"}, value, 0.5)
    return uri, folder


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split("[│┃]", line)[1:-1]]


def table_lines(text: str, recipe: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{recipe}:"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("└"))
    return lines[start : end + 1]


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_the_table_fits_the_terminal_and_leads_with_the_full_metric(store, columns):
    uri, folder = store
    text = run_in_terminal(["runs", "--tracking-uri", uri], folder, columns=columns)
    bbbp = table_lines(text, "bbbp_rnn")
    assert all(len(line) <= columns for line in bbbp), "\n".join(bbbp)
    header = cells(next(line for line in bbbp if "heldout_roc_auc" in line))
    assert header[:2] == ["heldout_roc_auc", "run"]  # the metric first, under its full name
    rows = [cells(line) for line in bbbp if line.startswith("│")]
    assert [row[0] for row in rows] == ["0.9478", "0.9123", "0.8812"]  # best first, never cut
    assert all(row[1].startswith("20261123-1200") for row in rows)  # the run, without the recipe's name
    assert header[2:4] == ["model.d_model", "train.lr"]  # then what differs between the runs
    assert [row[3] for row in rows] == ["0.003", "0.001", "0.0003"]
    mlp = table_lines(text, "mlp_synthetic")
    assert [cells(line)[0] for line in mlp if line.startswith("│")] == ["0.9681", "0.9556"]
    assert "mlflow ui --backend-store-uri" in text and "#/compare-runs?runs=[" in text


def test_piped_output_is_one_wide_table_with_every_differing_param(ddpx_here, store):
    uri, _ = store
    result = ddpx_here("runs", "--tracking-uri", uri)
    assert result.returncode == 0, result.output
    header = next(line for line in table_lines(result.stdout, "bbbp_rnn") if "heldout_roc_auc" in line)
    assert cells(header) == ["heldout_roc_auc", "run", "model.d_model", "train.lr", "duration", "status", "started"]
    assert "dataset.path" not in header  # the same in every run: it does not tell them apart
    assert "3.5 min" in result.stdout and "not shown at this width" not in result.stdout


def test_recipe_limit_json_and_the_compare_url(ddpx_here, store):
    uri, _ = store
    listed = json.loads(
        ddpx_here("runs", "--tracking-uri", uri, "--recipe", "bbbp_rnn", "--limit", "2", "--json").stdout
    )
    assert [r["metrics"]["heldout_roc_auc"] for r in listed["runs"]] == [0.947812, 0.912345]
    ids = json.dumps([r["run_id"] for r in listed["runs"]], separators=(",", ":"))
    assert listed["compare_url"].startswith(f"http://127.0.0.1:5000/#/compare-runs?runs={ids}&experiments=")
    worst = ddpx_here(
        "runs",
        "--tracking-uri",
        uri,
        "--recipe",
        "bbbp_rnn",
        "--sort",
        "heldout_roc_auc",
        "--ascending",
        "--limit",
        "1",
        "--json",
    ).stdout
    assert [r["metrics"]["heldout_roc_auc"] for r in json.loads(worst)["runs"]] == [0.881234]
    wrong = ddpx_here("runs", "--tracking-uri", uri, "--sort", "heldout_f1")
    assert wrong.returncode == 2 and "Sort by one of: heldout_accuracy, heldout_roc_auc" in wrong.stderr
