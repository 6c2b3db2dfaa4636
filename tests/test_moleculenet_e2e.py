"""MoleculeNet's multi-label tasks end to end on real ranks: Tox21-format files (gzip, 12 labels,
missing cells), per-label results in MLflow, held-out values equal to one process's on 2 and 3
ranks, and the download over loopback."""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import serve_directory
from mlflow.tracking import MlflowClient
from sklearn.metrics import roc_auc_score
from smiles_files import write_multilabel_csv

from ddpx.plugins.smiles.csv_table import read_smiles_csv
from ddpx.plugins.smiles.moleculenet import TOX21_LABELS
from ddpx.plugins.smiles.predict import SmilesPredictor, predict_table
from ddpx.plugins.smiles.splits import random_split
from ddpx.records.model_export import load_model

pytestmark = pytest.mark.slow  # every test here starts ranks

SMALL = ["model.num_layers=1", "model.d_model=32", "model.embedding_dim=32", "train.lr=0.01", "train.patience=0"]


def single_process_mean_roc_auc(path, checkpoint, seed=0):
    """The held-out mean ROC-AUC of ``checkpoint``, computed here in one process with scikit-learn:
    the recipe's split of the file, each label over the molecules that have it."""
    table = read_smiles_csv(path, "smiles", TOX21_LABELS, strict=True)
    _, _, heldout = random_split(table.labels, seed, 0.1, 1 / 9, stratify=False)
    probabilities = np.array(
        SmilesPredictor.from_checkpoint(checkpoint).predict_proba([table.smiles[i] for i in heldout])
    )
    targets = np.array([table.labels[i] for i in heldout])
    scores = []
    for j in range(len(TOX21_LABELS)):
        present = ~np.isnan(targets[:, j])
        if len(set(targets[present, j])) == 2:
            scores.append(roc_auc_score(targets[present, j], probabilities[present, j]))
    return float(np.mean(scores)), len(heldout)


def test_tox21_downloads_trains_on_3_ranks_logs_each_label_and_scores_exactly_on_2(job_here, tmp_path, new_store):
    served, data_dir = tmp_path / "served", tmp_path / "data"
    served.mkdir()
    write_multilabel_csv(served / "tox21.csv.gz", n=300, labels=TOX21_LABELS, gzip_it=True)
    with serve_directory(served) as (base, requests):  # the published file's name, fetched over loopback
        trained = job_here(
            "tox21_rnn",
            "dataset.download=true",
            "train.global_batch_size=0",  # 3 ranks: the recipe's 64 a step does not split in three
            f"dataset.url={base}/tox21.csv.gz",
            "train.max_epochs=4",
            *SMALL,
            nproc=3,
            tracking_uri=new_store,  # the recipe's own experiment, its one run
            env={"DDPX_DATA_DIR": str(data_dir)},
        )
    path = data_dir / "tox21" / "tox21.csv.gz"
    assert requests == ["/tox21.csv.gz"], "local rank 0 alone downloads"
    assert path.read_bytes() == (served / "tox21.csv.gz").read_bytes() and not list(path.parent.glob("*.part"))
    summary, run_dir = trained.summary(), trained.run_dirs()[0]
    expected, count = single_process_mean_roc_auc(path, run_dir / "checkpoints" / "best.pt")
    assert summary["heldout_samples"] == count == 30
    assert summary["heldout"]["heldout_roc_auc"] == pytest.approx(expected, abs=1e-6)
    assert expected > 0.8  # the chlorine and bromine rules are learnt through the missing cells

    client = MlflowClient(new_store)
    (run,) = client.search_runs([client.get_experiment_by_name("tox21_rnn").experiment_id])
    per_label = {k.split("/", 1)[1]: v for k, v in run.data.metrics.items() if k.startswith("heldout_roc_auc/")}
    assert set(per_label) <= set(TOX21_LABELS) and len(per_label) >= 10
    assert np.mean(list(per_label.values())) == pytest.approx(run.data.metrics["heldout_roc_auc"], abs=1e-9)
    params = run.data.params  # the recipe's values and the command line's overrides, each logged
    assert (params["model.num_layers"], params["model.bidirectional"], params["train.lr"]) == ("1", "True", "0.01")
    assert params["task"] == "tox21" and params["world_size"] == "3" and "NR-AR" in params["dataset.label_columns"]
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"heldout_roc_curves.png", "heldout_predictions.csv", "recipe.toml", "model"} <= artifacts
    assert {a.path for a in client.list_artifacts(run.info.run_id, "model")} == {
        "model/calibration.json",
        "model/model.json",
        "model/state_dict.pt",
    }
    (dataset,) = run.inputs.dataset_inputs
    assert dataset.dataset.source_type == "local" and str(path.resolve()) in dataset.dataset.source
    predictions = pd.read_csv(run_dir / "reports" / "heldout_predictions.csv")
    assert len(predictions) == 30 and {"target_NR-AR", "probability_SR-p53"} <= set(predictions.columns)

    # the same weights, held out on 2 ranks
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = job_here(
        "tox21_rnn",
        f"dataset.path={path}",
        "train.max_epochs=0",
        f"train.init_from={run_dir / 'checkpoints' / 'best.pt'}",
        *SMALL,
        cwd=elsewhere,
    )
    assert again.summary()["heldout"]["heldout_roc_auc"] == pytest.approx(expected, abs=1e-6)

    answers = predict_table(
        load_model(run_dir / "model"),
        json.loads((run_dir / "model" / "model.json").read_text())["task_info"],
        pd.DataFrame({"smiles": ["CCCl", "CCBr"]}),
    )
    assert [c for c in answers.columns if c.startswith("probability_")] == [f"probability_{n}" for n in TOX21_LABELS]
