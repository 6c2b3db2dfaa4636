"""The ``features_ffn`` model and the ``"molecule_features"`` input: Chemprop's featurizers joined
by ``+`` and cached one by one, unparsable molecules left out of their split, the model equal to
Chemprop's own feed-forward head on standardised features, ``ddpx predict``'s path answering a list
of SMILES. On real ranks: the same held-out value on 1, 2 and 3 ranks, and a trained model
answering a table through ``ddpx predict``."""

from __future__ import annotations

import json
import math
import random

import numpy
import pytest
import torch
from torch.utils.data import default_collate

from ddpx.api import UserError

chemprop = pytest.importorskip("chemprop", reason="the features model needs Chemprop (pip install 'ddpx[chem]')")

from test_dmpnn import UNPARSABLE, small_molecules, valid_molecule, write_graph_csv  # noqa: E402

from ddpx.plugins.smiles.features_ffn import build_features_ffn  # noqa: E402
from ddpx.plugins.smiles.features_ffn_spec import FEATURES_FFN_PARAMS  # noqa: E402
from ddpx.plugins.smiles.vectors import vector_outputs, vector_task_data  # noqa: E402

DEFAULTS = {name: param.default for name, param in FEATURES_FFN_PARAMS.items()}
BOTH = "morgan_count+rdkit_2d"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    monkeypatch.setenv("DDPX_DATA_DIR", str(folder))
    return folder


def small_task(*, regression: bool = False, log=print, features: str = BOTH, n_labels: int = 1):
    smiles, splits, labels, info = small_molecules(n_labels, regression)
    return smiles, splits, vector_task_data(smiles, splits, labels, info, "mols.csv", log, features)


def chemprops_features(smiles: str) -> numpy.ndarray:
    mol = chemprop.utils.make_mol(smiles)
    return numpy.concatenate([chemprop.featurizers.MoleculeFeaturizerRegistry[name]()(mol) for name in BOTH.split("+")])


def test_joined_featurizers_are_chemprops_side_by_side_cached_one_by_one(data_dir):
    said = []
    smiles, splits, data = small_task(log=said.append)
    assert (len(data.train), len(data.dev), len(data.heldout)) == (30, 6, 4)  # the unparsable two left out
    assert any("skipped 2 molecule(s) RDKit cannot parse (training 1, dev 1, held-out 0)" in line for line in said)
    features, label = data.train[3]
    theirs = numpy.nan_to_num(chemprops_features(smiles[splits["train"][3]]), nan=0.0, posinf=0.0, neginf=0.0)
    assert features.shape == (2048 + 217,) and torch.allclose(features, torch.tensor(theirs, dtype=torch.float32))
    assert label.item() == 0.0  # row 3: odd rows are label 0
    info = data.info
    assert info["inputs"] == "molecule_features" and info["molecule_features"] == BOTH
    train = numpy.stack([data.train[i][0].numpy().astype(numpy.float64) for i in range(len(data.train))])
    assert numpy.allclose(info["molecule_feature_scaler"]["mean"], train.mean(axis=0), atol=1e-4)  # training split's
    json.dumps(info)
    assert len(list((data_dir / "cache" / "molecule_features").glob("*.npy"))) == 2  # one file per featurizer
    said.clear()
    small_task(log=said.append, features="rdkit_2d")  # a part already computed is read, not computed again
    assert not any("computing" in line for line in said), said


def test_the_model_is_chemprops_head_on_standardised_features_and_answers_smiles(data_dir):
    smiles, splits, data = small_task()
    torch.manual_seed(0)
    model = build_features_ffn(DEFAULTS, data.info).eval()
    assert isinstance(model.predictor, chemprop.nn.BinaryClassificationFFN) and model.predictor.input_dim == 2048 + 217
    batch = torch.stack([data.heldout[i][0] for i in range(len(data.heldout))])
    scaler = data.info["molecule_feature_scaler"]
    standardised = (batch - torch.tensor(scaler["mean"])) / torch.tensor(scaler["std"])
    with torch.no_grad():
        logits = model(batch)
        assert logits.shape == (4,)
        assert torch.allclose(torch.sigmoid(logits), model.predictor(standardised).squeeze(-1), atol=1e-6)
        held = [smiles[row] for row in splits["heldout"]]
        assert torch.allclose(vector_outputs(model, held, BOTH), logits, atol=1e-6)  # ddpx predict, the logged model
    with pytest.raises(UserError, match="RDKit cannot parse the SMILES 'C1CC'"):
        vector_outputs(model, ["CCO", UNPARSABLE[0]], BOTH)


def test_a_variance_head_answers_a_mean_and_a_variance_and_trains_on_the_gaussian_nll(data_dir):
    from ddpx.rank.loop.losses import loss_function

    _, _, data = small_task(regression=True, features="morgan_count")
    model = build_features_ffn({**DEFAULTS, "uncertainty": "mve"}, data.info)
    assert isinstance(model.predictor, chemprop.nn.MveFFN)
    batch, targets = default_collate([data.train[i] for i in range(8)])
    standardised = model(batch)
    assert standardised.shape == (8, 2) and (standardised[:, 1] > 0).all()
    mean, variance = standardised[:, 0], standardised[:, 1]
    by_hand = (torch.log(2 * math.pi * variance) / 2 + (targets - mean) ** 2 / (2 * variance)).mean()
    assert torch.allclose(loss_function("gaussian_nll")(standardised, targets), by_hand, atol=1e-5)
    with torch.no_grad():
        answered = model.eval()(batch)
    assert torch.allclose(answered, torch.stack([mean * 2.0 + 3.0, variance * 4.0], dim=1).detach(), atol=1e-4)
    evidential = build_features_ffn({**DEFAULTS, "uncertainty": "evidential"}, data.info)
    assert isinstance(evidential.predictor, chemprop.nn.EvidentialFFN) and evidential(batch).shape == (8, 4)
    with torch.no_grad():
        assert evidential.eval()(batch).shape == (8, 2)  # the mean and the total variance


def test_several_labels_with_missing_cells_give_one_output_each_and_a_masked_loss(data_dir):
    from ddpx.rank.loop.losses import loss_function

    _, _, data = small_task(n_labels=2, features="morgan_count")
    _features, label = data.train[0]
    assert label.shape == (2,) and math.isnan(label[1].item())  # row 0: the second label is missing
    batch, labels = default_collate([data.train[i] for i in range(8)])
    assert batch.shape == (8, 2048) and labels.shape == (8, 2)
    model = build_features_ffn(DEFAULTS, data.info)
    outputs = model(batch)
    assert outputs.shape == (8, 2)
    loss = loss_function("bce_with_logits")(outputs, labels)
    assert torch.isfinite(loss), loss  # the missing cells are left out, not NaN


def test_a_graph_model_takes_joined_features_beside_its_graph(data_dir):
    from ddpx.plugins.smiles.dmpnn import build_dmpnn
    from ddpx.plugins.smiles.dmpnn_spec import DMPNN_PARAMS
    from ddpx.plugins.smiles.graphs import graph_outputs, graph_task_data

    rng = random.Random(2)
    smiles = [valid_molecule(rng, i % 2 == 0) for i in range(20)]
    splits = {"train": list(range(12)), "dev": list(range(12, 16)), "heldout": list(range(16, 20))}
    labels = {k: [float(i % 2 == 0) for i in v] for k, v in splits.items()}
    data = graph_task_data(
        smiles, splits, labels, {"labels": ["y"], "task_type": "classification"}, "m.csv", print, BOTH
    )
    (_graph, features), _ = data.train[0]
    assert features.shape == (2048 + 217,)
    model = build_dmpnn({name: p.default for name, p in DMPNN_PARAMS.items()}, data.info).eval()
    assert model.predictor.input_dim == 300 + 2048 + 217
    assert graph_outputs(model, [smiles[i] for i in splits["heldout"]], molecule_features=BOTH).shape == (4,)


def test_a_regression_features_model_answers_in_the_targets_units_in_eval_mode(data_dir):
    _, _, data = small_task(regression=True)
    model = build_features_ffn(DEFAULTS, data.info)
    batch = torch.stack([data.dev[i][0] for i in range(len(data.dev))])
    assert isinstance(model.predictor, chemprop.nn.RegressionFFN)
    with torch.no_grad():
        standardised = model.train()(batch)
        assert torch.allclose(model.eval()(batch), standardised * 2.0 + 3.0, atol=1e-5)


def test_without_feature_data_the_model_names_the_fix():
    with pytest.raises(UserError, match="dataset.molecule_features=morgan_count"):
        build_features_ffn(DEFAULTS, {"inputs": "molecule_graph", "labels": ["y"]})


@pytest.mark.slow
def test_the_heldout_value_is_the_same_on_1_2_and_3_ranks_and_predict_answers_a_table(job_here, ddpx_here, tmp_path):
    path = write_graph_csv(tmp_path / "mols.csv", n=150, unparsable=2)
    env = {"DDPX_DATA_DIR": str(tmp_path / "data")}
    common = [
        f"dataset.path={path}",
        "dataset.split=random",
        "dataset.molecule_features=morgan_count",
        "model.hidden_size=32",
        "train.eval_batch_size=4",
        "train.global_batch_size=0",  # 3 ranks: train.batch_size per rank
    ]  # uneven shards, filler calls
    (tmp_path / "w1").mkdir()
    trained = job_here(
        "bbbp_ffn",
        *common,
        "train.max_epochs=4",
        "train.batch_size=16",
        "train.lr_schedule=constant",
        "train.lr=0.003",
        nproc=1,
        env=env,
        cwd=tmp_path / "w1",
    )
    run_dir = trained.run_dirs()[0]
    heldouts = {1: trained.summary()}
    for nproc in (2, 3):
        workdir = tmp_path / f"w{nproc}"
        workdir.mkdir()
        heldouts[nproc] = job_here(
            "bbbp_ffn",
            *common,
            "train.max_epochs=0",
            f"train.init_from={run_dir / 'checkpoints' / 'best.pt'}",
            nproc=nproc,
            env=env,
            cwd=workdir,
        ).summary()
    values = {n: s["heldout"]["heldout_roc_auc"] for n, s in heldouts.items()}
    assert values[1] == values[2] == values[3] and values[1] > 0.8, values  # the same, and learned the chlorine
    assert len({s["heldout_samples"] for s in heldouts.values()}) == 1
    info = json.loads((run_dir / "model" / "model.json").read_text())["task_info"]
    assert info["inputs"] == "molecule_features" and len(info["molecule_feature_scaler"]["mean"]) == 2048
    table = tmp_path / "ask.csv"
    table.write_text("smiles\nClCCO\nCCO\nc1ccccc1CCl\n")
    answered = ddpx_here("predict", str(run_dir / "model"), str(table), "--output", str(tmp_path / "answers.csv"))
    assert answered.returncode == 0, answered.output
    rows = (tmp_path / "answers.csv").read_text().splitlines()
    assert rows[0] == "smiles,probability" and len(rows) == 4
    assert all(0 < float(row.rsplit(",", 1)[1]) < 1 for row in rows[1:])
