"""The best model of a run as an MLflow model: logged with the run and its held-out metrics,
registered, loaded with mlflow.pyfunc, served by ``mlflow models serve`` on loopback, and used by
``ddpx predict`` — every way giving the same probabilities; the run's checkpoint and exported model
reproduce its exact held-out metric (3 ranks)."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from smiles_files import write_smiles_csv

pytestmark = pytest.mark.slow  # trains a model

SMALL = [
    "train.max_epochs=8",
    "train.patience=0",
    "model.num_layers=1",
    "model.d_model=32",
    "model.embedding_dim=32",
    "train.lr=0.01",
]
ASKED = ["CCOCl", "c1ccccc1N", "CC(=O)NCl", "C1CCNCC1Br"]


def probabilities_of(text: str) -> dict[str, float]:
    return {row["smiles"]: float(row["probability"]) for row in csv.DictReader(io.StringIO(text))}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def served_predictions(model_uri: str, store: str, rows: list[str]) -> dict[str, float]:
    """POST the rows to a real ``mlflow models serve`` on 127.0.0.1; return its probabilities."""
    port = free_port()
    # the server runs uvicorn from the environment's bin folder, as in an activated environment
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": store,
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "models",
            "serve",
            "-m",
            model_uri,
            "--env-manager",
            "local",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2).read()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.stderr.read().decode()
                time.sleep(0.5)
        body = json.dumps({"dataframe_split": {"columns": ["smiles"], "data": [[s] for s in rows]}}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/invocations", data=body, headers={"Content-Type": "application/json"}
        )
        answer = json.loads(urllib.request.urlopen(request, timeout=60).read())
    finally:
        if server.poll() is None:
            os.killpg(server.pid, 15)
        server.wait(timeout=30)
    return {row["smiles"]: row["probability"] for row in answer["predictions"]}


def the_checkpoint_and_the_export_reproduce_the_exact_heldout_metric(result, molecules):
    """The run's checkpoint, through the SMILES predictor, scores its held-out split as the 3 ranks
    did; its reports are that split in order; its exported model folder rebuilds the same model."""
    from sklearn.metrics import roc_auc_score

    from ddpx.plugins.smiles.csv_table import read_smiles_csv
    from ddpx.plugins.smiles.predict import SmilesPredictor
    from ddpx.plugins.smiles.splits import random_split
    from ddpx.records.model_export import load_model

    summary, run_dir = result.summary(), result.run_dirs()[0]
    predictor = SmilesPredictor.from_checkpoint(run_dir / "checkpoints" / "best.pt")
    assert predictor.vocabulary.tokens[:2] == ["<pad>", "<unk>"] and "Cl" in predictor.vocabulary.index
    table = read_smiles_csv(molecules, "smiles", "p_np", strict=True)
    _, _, heldout = random_split(table.labels, seed=0, heldout_fraction=0.1, dev_fraction=0.2)
    scores = predictor.predict_proba([table.smiles[i] for i in heldout])
    expected = roc_auc_score([table.labels[i] for i in heldout], scores)
    assert summary["heldout"]["heldout_roc_auc"] == pytest.approx(expected, abs=1e-9)
    # the run folder's reports: the predictions CSV is the held-out split, in order, and scores the same
    rows = list(csv.DictReader((run_dir / "reports" / "heldout_predictions.csv").open()))
    assert [int(r["target"]) for r in rows] == [table.labels[i] for i in heldout]
    assert [float(r["probability"]) for r in rows] == pytest.approx(list(scores), abs=1e-6)  # the predictor's
    assert roc_auc_score([int(r["target"]) for r in rows], [float(r["probability"]) for r in rows]) == pytest.approx(
        expected, abs=1e-6
    )
    assert (run_dir / "reports" / "heldout_roc_curve.png").read_bytes()[:4] == b"\x89PNG"
    # the exported model (state dict + model.json with the vocabulary) rebuilds the same model
    spec = json.loads((run_dir / "model" / "model.json").read_text())
    assert spec["task_info"]["vocab"] == predictor.vocabulary.tokens
    exported = SmilesPredictor(load_model(run_dir / "model"), predictor.vocabulary)
    assert exported.predict_proba([table.smiles[i] for i in heldout]) == pytest.approx(scores, abs=1e-6)


def test_the_best_model_is_logged_registered_served_and_predicted_alike(
    run_ddpx, ddpx_here, tmp_path, new_store, monkeypatch
):
    import mlflow
    from mlflow.tracking import MlflowClient

    store = new_store
    molecules = write_smiles_csv(tmp_path / "molecules.csv", n=240)
    trained = run_ddpx(
        "recipe",
        "bbbp_rnn",
        "--nproc",
        "3",
        "--tracking-uri",
        store,
        "--no-system-metrics",
        "--register",
        "bbbp-test",
        f"dataset.path={molecules}",
        "train.global_batch_size=0",  # 3 ranks, train.batch_size each
        *SMALL,
        env={"DDPX_LOG_MODEL": "true"},
    )
    assert trained.returncode == 0, trained.output
    the_checkpoint_and_the_export_reproduce_the_exact_heldout_metric(trained, molecules)
    client = MlflowClient(store)
    (run,) = client.search_runs([client.get_experiment_by_name("bbbp_rnn").experiment_id])
    (model,) = client.search_logged_models(experiment_ids=[run.info.experiment_id])
    assert model.source_run_id == run.info.run_id and model.name == "model"
    attached = {m.key: m.value for m in model.metrics or []}
    assert attached["heldout_roc_auc"] == run.data.metrics["heldout_roc_auc"]  # the model carries its result
    (version,) = client.search_model_versions("name='bbbp-test'")
    assert version.source == f"models:/{model.model_id}"  # the registered version is this logged model

    asked = tmp_path / "asked.csv"
    asked.write_text("smiles\n" + "\n".join(ASKED) + "\n")
    import pandas as pd
    from mlflow.tracking._tracking_service import utils as mlflow_uri

    monkeypatch.setattr(mlflow_uri, "_tracking_uri", mlflow_uri._tracking_uri)  # put back for the next test
    mlflow.set_tracking_uri(store)
    loaded = mlflow.pyfunc.load_model(f"models:/{model.model_id}").predict(pd.DataFrame({"smiles": ASKED}))
    expected = dict(zip(loaded["smiles"], loaded["probability"]))
    assert set(expected) == set(ASKED) and all(0 < p < 1 for p in expected.values())
    assert expected["CCOCl"] > expected["c1ccccc1N"]  # it learnt the files' chlorine rule

    by_run = ddpx_here("predict", run.info.run_id, str(asked), "--tracking-uri", store, "--coverage", "0.9")
    assert by_run.returncode == 0, by_run.output
    sets = mlflow.pyfunc.load_model(f"models:/{model.model_id}").predict(
        pd.DataFrame({"smiles": ASKED}), params={"coverage": 0.9}
    )
    by_run_sets = list(csv.DictReader(io.StringIO(by_run.stdout)))
    assert [row["set"] for row in by_run_sets] == sets["set"].tolist() and "set" not in loaded.columns
    served = served_predictions(f"runs:/{run.info.run_id}/model", store, ASKED)  # (a run folder: test_vision_e2e)
    for answers in (probabilities_of(by_run.stdout), served):
        assert answers == pytest.approx(expected, abs=1e-6)


def test_predict_explains_a_wrong_model_or_input(ddpx_here, tmp_path, new_store):
    from mlflow.tracking import MlflowClient

    from ddpx.plugins.mlp_synthetic.data import make_splits
    from ddpx.plugins.mlp_synthetic.model import MLP
    from ddpx.records.model_export import write_model_files

    store = new_store
    MlflowClient(store).search_experiments()
    table = tmp_path / "rows.csv"
    table.write_text("formula\nC2H6O\n")
    unknown = ddpx_here("predict", "0" * 32, str(table), "--tracking-uri", store)
    assert unknown.returncode == 2 and "cannot load the model '00000000" in unknown.stderr
    # a model folder as a run writes it: an mlp_synthetic model of 4 features (untrained: these are errors)
    sizes = {
        "train_size": 64,
        "dev_size": 32,
        "heldout_size": 32,
        "dim_in": 4,
        "n_classes": 32,
        "class_sep": 0.4,
        "label_noise": 0.03,
    }
    model = {"name": "mlp", "n_layers": 2, "dim_hidden": 8}
    write_model_files(
        tmp_path / "model",
        MLP(4, 32, 8, 2).state_dict(),
        {"task": "mlp_synthetic", "model": model},
        make_splits(sizes, seed=0).info,
    )
    folder = str(tmp_path / "model")
    other_task = ddpx_here("predict", folder, str(table))
    assert (
        other_task.returncode == 2
        and "reads 4 feature columns x0..x3; the input lacks x0, x1, x2, x3" in other_task.stderr
    )
    (tmp_path / "blob.csv").write_bytes(bytes(range(256)) * 4)
    unreadable = ddpx_here("predict", folder, str(tmp_path / "blob.csv"))
    assert unreadable.returncode == 2 and "cannot read" in unreadable.stderr
    features = tmp_path / "features.csv"
    features.write_text("x0,x1,x2,x3\n0.1,0.2,0.3,0.4\n")
    answered = ddpx_here("predict", folder, str(features), "--output", str(tmp_path / "answers.csv"))
    assert answered.returncode == 0 and "1 prediction(s) written to" in answered.stderr
    assert (tmp_path / "answers.csv").read_text().splitlines()[0] == "predicted,probability"
    uncalibrated = ddpx_here("predict", folder, str(features), "--coverage", "0.9")
    assert uncalibrated.returncode == 2 and "saved without a calibration (calibration.json" in uncalibrated.stderr
    import numpy as np

    from ddpx.records.calibration import fit_calibration

    scores = np.random.default_rng(0).normal(size=(40, 32))
    fit_calibration(scores, np.arange(40) % 32, "cross_entropy", [str(c) for c in range(32)], "none").save(
        tmp_path / "model"
    )
    several = ddpx_here("predict", folder, str(features), "--coverage", "0.9")
    assert several.returncode == 2 and "this model answers one of several classes per row" in several.stderr
    nonsense = ddpx_here("predict", folder, str(features), "--coverage", "90")
    assert nonsense.returncode == 2 and "between 0 and 1 (such as 0.9), not 90.0" in nonsense.stderr
    assert "Traceback" not in unknown.output + other_task.output + unreadable.output + several.output
