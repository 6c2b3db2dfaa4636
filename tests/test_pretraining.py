"""Descriptor pretraining on MOSES-shaped data (``moses_pretrain_dmpnn``): a gzip CSV with one
``SMILES`` column, its first N molecules, the targets standardised with the training split's
statistics (recorded with the model), the model logged to MLflow. A D-MPNN fine-tuned from that
MLflow model starts with its encoder (the run folder gives the same weights), keeps it bit for bit
through its frozen epoch, then trains it, and records the pretraining run. Mistakes in the data
are errors before launch."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import numpy
import pytest
import torch

pytest.importorskip("chemprop", reason="the graph model needs Chemprop (pip install 'ddpx[chem]')")

from smiles_files import write_regression_csv

from ddpx.plugins.smiles.descriptors import NAMES, compute_descriptors
from ddpx.plugins.smiles.encoder_source import digest, pretrained_encoder
from ddpx.plugins.smiles.pretraining_data import random_rows
from ddpx.records.model_export import weights_sha256

TINY = ["model.hidden_size=24", "model.depth=2", "model.ffn_hidden_size=16"]
ENCODER = {"hidden_size": 24, "depth": 2, "atom_messages": False, "message_bias": False, "undirected": False}
ENCODER |= {"activation": "relu", "dropout": 0.0}
PIECES = ["C", "CC", "O", "N", "C(=O)", "c1ccccc1", "C1CCNCC1", "C(C)C", "c1ccncc1", "S(=O)(=O)", "C(F)(F)"]


def write_moses_file(path: Path, n: int, seed: int = 0) -> list[str]:
    """MOSES's shape: gzip, one column ``SMILES``; the first molecule RDKit cannot parse."""
    rng = random.Random(seed)
    smiles = ["C1CC"] + [
        "".join(rng.choice(PIECES) for _ in range(rng.randint(2, 6))) + rng.choice(["Cl", "Br", "F", "C"])
        for _ in range(n - 1)
    ]
    path.write_bytes(gzip.compress(("SMILES\n" + "\n".join(smiles) + "\n").encode()))
    return smiles


def pretrain(job_here, tmp_path: Path, store: str, env: dict) -> tuple[Path, list[str]]:
    """``moses_pretrain_dmpnn`` on the first 120 molecules of a MOSES-shaped file, on 2 ranks, its model logged."""
    smiles = write_moses_file(tmp_path / "train.csv.gz", n=140)
    (tmp_path / "pretrain").mkdir()
    result = job_here(
        "moses_pretrain_dmpnn",
        f"dataset.path={tmp_path / 'train.csv.gz'}",
        "dataset.limit=120",
        "dataset.heldout_fraction=0.1",
        "dataset.dev_fraction=0.1",
        *TINY,
        "train.max_epochs=1",
        "train.global_batch_size=32",
        nproc=2,
        tracking_uri=store,
        env={**env, "DDPX_LOG_MODEL": "true"},
        cwd=tmp_path / "pretrain",
    )
    return result.run_dirs()[0], smiles


def check_training_split_statistics(run_dir: Path, smiles: list[str]) -> None:
    """The targets' mean and deviation recorded with the model are the training split's."""
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metric"] == "r2" and summary["heldout_samples"] == 12  # 10 % of the first 120
    info = json.loads((run_dir / "model" / "model.json").read_text())["task_info"]
    assert info["labels"] == list(NAMES) and info["molecules"] == 120
    train = random_rows(120, 0, 0.1, 0.1)["train"]
    train = train[train != 0]  # the molecule RDKit cannot parse has no graph, and leaves its split
    values = compute_descriptors(smiles[:120]).astype(numpy.float64)
    numpy.testing.assert_allclose(info["target_scaler"]["mean"], values[train].mean(axis=0), rtol=1e-6)
    std = values[train].std(axis=0)
    numpy.testing.assert_allclose(info["target_scaler"]["std"], numpy.where(std > 0, std, 1), rtol=1e-5)
    assert not numpy.allclose(info["target_scaler"]["mean"], numpy.nanmean(values, axis=0))  # not all molecules'


@pytest.mark.slow
def test_pretraining_on_moses_shaped_data_then_fine_tuning_from_its_mlflow_model(job_here, tmp_path, new_store):
    import mlflow

    env = {"DDPX_DATA_DIR": str(tmp_path / "data")}
    run_dir, smiles = pretrain(job_here, tmp_path, new_store, env)
    check_training_split_statistics(run_dir, smiles)
    client = mlflow.MlflowClient(new_store)
    run_id = json.loads((run_dir / "tracking.json").read_text())["run_id"]
    (logged,) = client.search_logged_models(experiment_ids=[client.get_run(run_id).info.experiment_id])
    pretrained = torch.load(run_dir / "model" / "state_dict.pt", weights_only=True)
    spec = json.loads((run_dir / "model" / "model.json").read_text())  # the weights' digest, to compare a remake by
    assert spec["weights_sha256"] == {"state_dict.pt": weights_sha256(pretrained)}
    start = {k[len("message_passing.") :]: v for k, v in pretrained.items() if k.startswith("message_passing.")}
    folder = pretrained_encoder({**ENCODER, "encoder_from": str(run_dir)}, None)  # the run folder reads the same
    assert all(torch.equal(folder.weights[k], v) for k, v in start.items()) and folder.weights.keys() == start.keys()
    assert folder.lineage["ddpx.encoder_from.run_id"] == run_id
    assert folder.lineage["ddpx.encoder_from.recipe"] == "moses_pretrain_dmpnn"
    tuned = job_here(
        "smiles_csv_dmpnn",
        f"dataset.path={write_regression_csv(tmp_path / 'measured.csv', n=60, targets=['log S'])}",
        "dataset.label_columns=['log S']",
        "dataset.task_type=regression",
        *TINY,
        f"model.encoder_from=models:/{logged.model_id}",
        "train.max_epochs=2",
        "train.freeze_encoder_epochs=1",
        "train.select_by=loss",
        nproc=2,
        plugins=("ddpx_testplug_encoder_epochs",),
        tracking_uri=new_store,
        env=env,
    ).run_dirs()[0]
    after = [torch.load(tuned / f"encoder-epoch-{epoch}.pt", weights_only=True) for epoch in (1, 2)]
    assert all(torch.equal(after[0][k], start[k]) for k in start)  # frozen: as it started, bit for bit
    assert not all(torch.equal(after[1][k], start[k]) for k in start)  # then it learns
    run = client.get_run(json.loads((tuned / "tracking.json").read_text())["run_id"])
    assert run.data.params["model.encoder_from"] == f"models:/{logged.model_id}"
    assert {k: v for k, v in run.data.tags.items() if k.startswith("ddpx.encoder_from")} == {
        "ddpx.encoder_from": f"models:/{logged.model_id}",
        "ddpx.encoder_from.kind": "MLflow model",
        "ddpx.encoder_from.run_id": run_id,
        "ddpx.encoder_from.task": "moses",
        "ddpx.encoder_from.sha256": digest(start),
    }


PRETRAINING_MISTAKES = {
    "no file": (["dataset.path=NOWHERE"], "no SMILES file at", "molsets"),
    "no SMILES column": (["dataset.smiles_column=smiles"], "has no column 'smiles'", "dataset.smiles_column=NAME"),
    "too few molecules": (["dataset.limit=20"], "every split needs at least 2", "Raise dataset.limit"),
    "a model of tokens": (["RNN"], "which task 'moses' cannot give", "such as dmpnn"),
}


@pytest.mark.parametrize("case", list(PRETRAINING_MISTAKES))
def test_a_pretraining_mistake_is_an_error_before_launch(case, ddpx_here, tmp_path):
    keys, said, fix = PRETRAINING_MISTAKES[case]
    write_moses_file(tmp_path / "train.csv.gz", n=40)
    keys = [key.replace("NOWHERE", str(tmp_path / "nowhere.csv.gz")) for key in keys]
    recipe = "moses_pretrain_dmpnn"
    if keys == ["RNN"]:  # a recipe of one's own, the SMILES BiLSTM on task moses
        (tmp_path / "rnn.toml").write_text('task = "moses"\n[model]\nname = "smiles_rnn"\n')
        recipe, keys = str(tmp_path / "rnn.toml"), []
    result = ddpx_here("recipe", recipe, f"dataset.path={tmp_path / 'train.csv.gz'}", *keys)
    message = result.stderr.strip()
    assert result.returncode == 2 and message.startswith("Error: ") and "\n" not in message, result.output
    assert said in message and fix in message, message
    assert not (tmp_path / "ddpx-runs").exists() and not (tmp_path / "mlflow.db").exists()


def test_the_encoder_made_again_on_another_machine_is_its_record_to_every_digit():
    """The claim of docs/pretraining.md, from the two committed records: the MOSES encoder made on the
    machine of 2026-11-28 and again on its replacement (its second epoch from the first's checkpoint)."""
    scale = Path(__file__).resolve().parent.parent / "benchmarks" / "scale"
    first, again = (
        json.loads((scale / f"pretrain-moses-cpu-{day}.json").read_text()) for day in ("2026-11-28", "2026-11-29")
    )
    assert first["code"] == again["code"] and first["prepare"]["split"] == again["prepare"]["split"]
    compared = ("epoch", "train_loss", "dev_r2", "dev_loss", "lr")
    assert [{k: e[k] for k in compared} for e in first["epochs"]] == [
        {k: e[k] for k in compared} for e in again["epochs"]
    ]
    assert {k: first["heldout"][k] for k in first["heldout"]} == {k: again["heldout"][k] for k in first["heldout"]}
    assert first["weights"]["sha256"] == again["weights"]["sha256"] and len(again["weights"]["weights_sha256"]) == 64
