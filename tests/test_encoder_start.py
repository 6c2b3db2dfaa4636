"""Fine-tuning from a pretrained encoder (``model.encoder_from``): Chemprop's model files (saved by
Chemprop's own API: ``chemprop train``'s ``.pt``, a Lightning ``.ckpt``, a foundation model's
message passing) start a D-MPNN's message passing with their weights and a new head; a source
that cannot start the model is one paragraph, exit 2, before any rank starts and with no MLflow
run. (A run fine-tuned from a pretraining run, its frozen epochs and its lineage:
``test_pretraining.py``.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

chemprop = pytest.importorskip("chemprop", reason="the graph model needs Chemprop (pip install 'ddpx[chem]')")

from chemprop import models as chem_models  # noqa: E402
from chemprop import nn as chem_nn  # noqa: E402
from chemprop.models.utils import save_model  # noqa: E402
from smiles_files import write_smiles_csv  # noqa: E402

from ddpx.plugins.smiles.encoder_source import digest, pretrained_encoder  # noqa: E402

TINY = ["model.hidden_size=24", "model.depth=2", "model.ffn_hidden_size=16"]
PARAMS = {
    "hidden_size": 24,
    "depth": 2,
    "atom_messages": False,
    "message_bias": False,
    "undirected": False,
    "activation": "relu",
    "dropout": 0.0,
}


def chemprop_model(seed: int = 7) -> chem_models.MPNN:
    """A small MPNN as Chemprop builds it (``chemprop train``'s parts), criterion and metrics included."""
    torch.manual_seed(seed)
    return chem_models.MPNN(
        chem_nn.BondMessagePassing(d_h=24, depth=2),
        chem_nn.MeanAggregation(),
        chem_nn.BinaryClassificationFFN(input_dim=24, hidden_dim=16, criterion=chem_nn.metrics.BCELoss()),
        metrics=[chem_nn.metrics.BinaryAUROC()],
    )


def message_passing_file(model: chem_models.MPNN, path: Path) -> Path:
    """The message passing alone, as a foundation model's file holds it (CheMeleon's ``chemeleon_mp.pt``)."""
    hparams = {k: v for k, v in model.message_passing.hparams.items() if k != "cls"}
    torch.save(
        {"hyper_parameters": {**hparams, "activation": "relu"}, "state_dict": model.message_passing.state_dict()}, path
    )
    return path


def lightning_checkpoint(model: chem_models.MPNN, path: Path) -> Path:
    """A Lightning checkpoint of the model after one short epoch (``chemprop train`` keeps these)."""
    import lightning
    from chemprop import data, featurizers

    points = [
        data.MoleculeDatapoint.from_smi(s, [float(i % 2)]) for i, s in enumerate(["CCO", "CCN", "c1ccccc1", "CC(=O)O"])
    ]
    loader = data.build_dataloader(
        data.MoleculeDataset(points, featurizers.SimpleMoleculeMolGraphFeaturizer()), batch_size=4, shuffle=False
    )
    trainer = lightning.Trainer(
        max_epochs=1, logger=False, enable_progress_bar=False, enable_checkpointing=False, enable_model_summary=False
    )
    trainer.fit(model, loader)
    trainer.save_checkpoint(path)
    return path


def test_every_chemprop_file_gives_the_message_passing_weights_as_chemprop_holds_them(tmp_path):
    model = chemprop_model()
    saved = tmp_path / "model.pt"
    save_model(saved, model)  # chemprop.models.utils.save_model: what `chemprop train` writes
    files = {
        "Chemprop model file": saved,
        "Chemprop message-passing file": message_passing_file(model, tmp_path / "mp.pt"),
    }
    for kind, path in files.items():
        start = pretrained_encoder({**PARAMS, "encoder_from": str(path)}, None)
        expected = model.message_passing.state_dict()
        assert start.weights.keys() == expected.keys() and all(
            torch.equal(start.weights[k], expected[k]) for k in expected
        )
        assert start.lineage["ddpx.encoder_from.kind"] == kind and start.lineage["ddpx.encoder_from"] == str(path)
        assert start.lineage["ddpx.encoder_from.sha256"] == digest(expected)
    trained = lightning_checkpoint(model, tmp_path / "last.ckpt")  # trained one epoch: weights moved
    start = pretrained_encoder({**PARAMS, "encoder_from": str(trained)}, None)
    assert all(torch.equal(start.weights[k], v) for k, v in model.message_passing.state_dict().items())
    assert pretrained_encoder({**PARAMS, "encoder_from": ""}, None) is None


@pytest.mark.slow
def test_a_chemprop_model_file_starts_the_encoder_with_a_new_head(job_here, tmp_path):
    model = chemprop_model()
    save_model(tmp_path / "model.pt", model)  # what `chemprop train` writes
    run_dir = job_here(
        "smiles_csv_dmpnn",
        f"dataset.path={write_smiles_csv(tmp_path / 'mols.csv', n=60)}",
        "dataset.label_column=p_np",
        *TINY,
        f"model.encoder_from={tmp_path / 'model.pt'}",
        "train.max_epochs=0",  # the held-out evaluation of the starting weights, which the run exports
        nproc=1,
        env={"DDPX_DATA_DIR": str(tmp_path / "data")},
    ).run_dirs()[0]
    weights, theirs = torch.load(run_dir / "model" / "state_dict.pt", weights_only=True), model.state_dict()
    encoder = [k for k in weights if k.startswith("message_passing.")]
    assert encoder and all(torch.equal(weights[k], theirs[k]) for k in encoder)  # Chemprop's names, as they are
    head = [k for k in weights if k.startswith("predictor.ffn.")]
    assert [weights[k].shape for k in head] == [theirs[k].shape for k in head]  # the same shapes...
    assert not any(torch.equal(weights[k], theirs[k]) for k in head)  # ...and a new head


def bilstm_run_folder(folder: Path) -> Path:
    """A run folder whose model/ holds a SMILES BiLSTM, written as a run writes it."""
    from ddpx.plugins.smiles.model import build_smiles_rnn
    from ddpx.plugins.smiles.params import MODEL_PARAMS
    from ddpx.records.model_export import write_model_files

    params = {name: param.default for name, param in MODEL_PARAMS.items()}
    info = {"vocab": ["<pad>", "C", "O"], "pad_id": 0, "labels": ["p_np"], "inputs": "smiles_tokens"}
    config = {"task": "smiles_csv", "model": {"name": "smiles_rnn", **params}}
    write_model_files(folder / "model", build_smiles_rnn(params, info).state_dict(), config, info)
    return folder


WRONG_STARTS = {  # the keys (CHEMPROP: a Chemprop file of hidden size 24, depth 2), what the error says, its fix
    "another hidden size": (
        ["model.encoder_from=CHEMPROP", "model.depth=2"],
        "trained with model.hidden_size=24,",
        "Add model.hidden_size=24 to",
    ),
    "another depth": (
        ["model.encoder_from=CHEMPROP", "model.hidden_size=24"],
        "this run has model.depth=3",
        "Add model.depth=2",
    ),
    "a BiLSTM run": (
        ["model.encoder_from=BILSTM"],
        "holds a SMILES BiLSTM/GRU (model.name=smiles_rnn)",
        "*_dmpnn recipe",
    ),
    "a missing path": (["model.encoder_from=MISSING"], "does not exist", "a Chemprop model file (.pt, .ckpt)"),
    "an MLflow run, no store here": (["model.encoder_from=" + "a" * 32], "no MLflow store", "--tracking-uri"),
    "a checkpoint too": (
        ["model.encoder_from=CHEMPROP", *TINY, "train.init_from=CHEMPROP"],
        "keep one",
        "init_from=''",
    ),
    "freezing a fresh encoder": (["train.freeze_encoder_epochs=2"], "random weights", "train.freeze_encoder_epochs=0"),
}


@pytest.mark.parametrize("case", list(WRONG_STARTS))
def test_an_encoder_that_cannot_start_the_model_is_an_error_before_launch(case, ddpx_here, tmp_path):
    keys, said, fix = WRONG_STARTS[case]
    save_model(tmp_path / "model.pt", chemprop_model())
    places = {
        "CHEMPROP": tmp_path / "model.pt",
        "BILSTM": bilstm_run_folder(tmp_path / "bilstm"),
        "MISSING": tmp_path / "no",
    }
    for name, place in places.items():
        keys = [key.replace(name, str(place)) for key in keys]
    workdir = tmp_path / "here"
    workdir.mkdir()
    csv = write_smiles_csv(tmp_path / "mols.csv", n=60)
    result = ddpx_here(
        "recipe", "smiles_csv_dmpnn", f"dataset.path={csv}", "dataset.label_column=p_np", *keys, cwd=workdir
    )
    assert result.returncode == 2, result.output
    message = result.stderr.strip()
    assert message.startswith("Error: ") and "\n" not in message, message  # one paragraph
    assert said in message and fix in message, message
    assert not (workdir / "ddpx-runs").exists() and not (workdir / "mlflow.db").exists()  # nothing started


def test_freezing_a_model_without_an_encoder_is_an_error_before_launch(ddpx_here, tmp_path):
    result = ddpx_here(
        "recipe",
        "smiles_csv_rnn",
        f"dataset.path={write_smiles_csv(tmp_path / 'mols.csv', n=60)}",
        "dataset.label_column=p_np",
        "train.freeze_encoder_epochs=1",
    )
    assert result.returncode == 2 and "model smiles_rnn has none" in result.stderr, result.output
    assert not (tmp_path / "ddpx-runs").exists() and not (tmp_path / "mlflow.db").exists()
