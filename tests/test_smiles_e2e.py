"""The SMILES task end to end: bad rows, errors before launch, scaffold split and enumeration, real
BBBP on torchrun. (The predictor and the exported model: test_logged_model.py.)"""

import os
from pathlib import Path

import pytest
from conftest import TESTS
from real_data import BBBP, needs_bbbp
from sklearn.metrics import roc_auc_score
from smiles_files import write_smiles_csv

from ddpx.plugins.smiles.csv_table import read_smiles_csv
from ddpx.plugins.smiles.predict import SmilesPredictor

# A one-layer model learns the test files' chlorine rule in a few epochs at a third of the
# recipe model's cost; only the real-BBBP test below needs more.
SMALL = ["model.num_layers=1", "model.d_model=32", "model.embedding_dim=32", "train.lr=0.01"]
FAST = ["train.max_epochs=8", "train.patience=0", *SMALL]


@pytest.fixture
def molecules(tmp_path) -> Path:
    return write_smiles_csv(tmp_path / "molecules.csv", n=240)


@pytest.mark.slow
def test_bad_rows_are_reported_once_and_skipped(run_ddpx, ddpx_here, tmp_path):
    """On a user's own classification file (task smiles_csv), with a GRU."""
    path = write_smiles_csv(tmp_path / "bad.csv", n=240, extra_rows="241,empty,1,\r\n242,odd,1,CC X\r\n")
    result = run_ddpx(
        "recipe",
        "smiles_csv_rnn",
        "--nproc",
        "1",
        "--tracking",
        "none",
        f"dataset.path={path}",
        "dataset.label_column=p_np",
        "train.max_epochs=1",
        "model.cell=gru",
        *SMALL,
    )
    assert result.returncode == 0, result.output
    assert result.summary()["metric"] == "roc_auc"
    gru = SmilesPredictor.from_checkpoint(result.run_dirs()[0] / "checkpoints" / "best.pt").model.rnn
    assert type(gru).__name__ == "GRU"
    assert result.stdout.count("skipped 2 bad row(s)") == 1
    assert "an empty SMILES (line 242)" in result.stdout and "cannot represent (line 243)" in result.stdout
    strict = ddpx_here(
        "recipe",
        "smiles_csv_rnn",
        "--tracking",
        "none",
        f"dataset.path={path}",
        "dataset.label_column=p_np",
        "dataset.strict=true",
    )
    assert strict.returncode == 2 and strict.stderr.count("has bad rows") == 1 and "Traceback" not in strict.output
    assert strict.run_dirs() == result.run_dirs()  # refused before launch: no new run folder


def test_missing_file_and_missing_rdkit_are_errors_before_launch(run_ddpx, ddpx_here, tmp_path, molecules):
    missing = ddpx_here("recipe", "bbbp_rnn", env={"DDPX_DATA_DIR": str(tmp_path / "empty")})
    assert missing.returncode == 2
    assert "BBBP is MoleculeNet's public" in missing.stderr and "deepchemdata" in missing.stderr
    assert "dataset.download=true" in missing.stderr

    no_rdkit = {"PYTHONPATH": os.pathsep.join([str(TESTS / "fake_no_rdkit"), str(TESTS / "plugins")])}
    for key in ("dataset.split=scaffold", "dataset.canonicalize=true", "dataset.enumerate=2"):
        result = run_ddpx("recipe", "bbbp_rnn", f"dataset.path={molecules}", key, env=no_rdkit)
        assert result.returncode == 2, result.output
        assert "needs RDKit" in result.stderr and "pip install 'ddpx[chem]'" in result.stderr


@pytest.mark.slow
def test_scaffold_split_canonical_and_enumerated_smiles_in_length_buckets_score_exactly(job_here, molecules):
    """Two ranks train on randomised SMILES in length-bucketed batches; the held-out ROC-AUC of the
    averaged predictions (written SMILES and two randomised ones) is the one computed here."""
    pytest.importorskip("rdkit")
    import torch

    from ddpx.plugins.smiles.chem import canonicalizer
    from ddpx.plugins.smiles.dataset import collate
    from ddpx.plugins.smiles.enumeration import enumerate_all
    from ddpx.plugins.smiles.splits import scaffold_split

    # bbbp_rnn_enum: scaffold split, enumerated SMILES, length buckets; fewer forms and epochs here
    result = job_here(
        "bbbp_rnn_enum",
        f"dataset.path={molecules}",
        "dataset.canonicalize=true",
        "dataset.enumerate=3",
        "dataset.eval_enumerate=2",
        "train.max_epochs=2",
        *SMALL,
    )
    predictor = SmilesPredictor.from_checkpoint(result.run_dirs()[0] / "checkpoints" / "best.pt")
    table = read_smiles_csv(molecules, "smiles", "p_np", strict=False, canonical=canonicalizer())  # as the run read it
    _, _, heldout = scaffold_split(table.smiles, 0.1, 1 / 9)
    ways = enumerate_all(table.smiles, table.tokens, heldout, 2, seed=0)
    assert all(len({"".join(w) for w in molecule}) > 1 for molecule in ways if len(molecule[0]) > 4)
    encode = predictor.vocabulary.encode
    inputs, _ = collate([([torch.tensor(encode(t)) for t in molecule], torch.tensor(0.0)) for molecule in ways])
    with torch.no_grad():
        probabilities = torch.sigmoid(predictor.model(inputs)).tolist()
    expected = roc_auc_score([table.labels[i] for i in heldout], probabilities)
    assert result.summary()["heldout"]["heldout_roc_auc"] == pytest.approx(expected, abs=1e-6)


@pytest.mark.slow
@needs_bbbp
def test_real_bbbp_reaches_a_roc_auc_a_broken_pipeline_cannot(run_ddpx):
    # the pipeline on the real file with a one-layer model (held-out ROC-AUC about 0.93 after 3
    # epochs); the recipe's own model and numbers are measured by benchmarks/moleculenet_quality/run.py
    result = run_ddpx(
        "recipe",
        "bbbp_rnn",
        "--launcher",
        "torchrun",
        "--nproc",
        "2",
        "--tracking",
        "none",
        f"dataset.path={BBBP}",
        "train.max_epochs=3",
        "model.num_layers=1",
        "model.d_model=64",
        "model.embedding_dim=64",
        timeout=600,
    )
    assert result.returncode == 0, result.output
    summary = result.summary()
    # 10 % of 2050 held out, every molecule scored once, but for the one of BBBP's 11 RDKit cannot parse that
    # falls there: every model family leaves them out, the BiLSTM too (the same molecules as the graph model)
    assert summary["heldout_samples"] == 204
    assert result.stdout.count("skipped 11 molecule(s) RDKit cannot parse") == 1
    assert summary["heldout"]["heldout_roc_auc"] >= 0.85
