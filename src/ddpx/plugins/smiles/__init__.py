"""SMILES tasks (``bbbp``, ``smiles_csv``), the ``smiles_rnn`` model and the ``bbbp_rnn`` recipe.

Binary classification of molecules from their SMILES strings. ``bbbp`` is MoleculeNet's
blood-brain barrier penetration set (columns ``smiles`` and ``p_np``); ``smiles_csv`` is the same
task for any CSV with one SMILES column and one 0/1 label column (set ``dataset.path``,
``dataset.smiles_column``, ``dataset.label_column``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ddpx.api import ModelSpec, Param, RecipeSource, TablePredictor, TaskSpec, hookimpl

BBBP_URL = "https://deepchemdata.s3-us-west-1.amazonaws.com/datasets/BBBP.csv"


def smiles_params(*, smiles_column: str, label_column: str, url: str) -> dict[str, Param]:
    return {
        "path": Param("", "the CSV file (empty: the task's default location)"),
        "smiles_column": Param(smiles_column, "column holding the SMILES strings"),
        "label_column": Param(label_column, "column holding the 0/1 labels"),
        "strict": Param(False, "refuse a file with bad rows instead of skipping them"),
        "download": Param(False, "download dataset.url when the file is missing (one process per machine)"),
        "url": Param(url, "where dataset.download fetches the file from", schemes=("http", "https")),
        "split": Param("random", "random (stratified) or scaffold (Bemis-Murcko, needs RDKit)", choices=("random", "scaffold")),
        "canonicalize": Param(False, "validate and canonicalise SMILES with RDKit (needs RDKit)"),
        "heldout_fraction": Param(0.1, "fraction of molecules held out", above=0, below=1),
        "dev_fraction": Param(0.2, "fraction of the rest used for model selection", above=0, below=1),
    }


def bbbp_default_path() -> Path:
    from ddpx.api import data_root

    return data_root() / "bbbp" / "BBBP.csv"


BBBP_MISSING = (
    "BBBP is MoleculeNet's public blood-brain barrier penetration file, at {url}. Download it to {path}, "
    "point dataset.path=FILE to a copy, or add dataset.download=true to fetch it."
)


def no_default_path() -> None:
    return None


CSV_MISSING = "Check dataset.path."


def build_bbbp(request):
    from ddpx.plugins.smiles.data import build_smiles_data

    return build_smiles_data(request, bbbp_default_path, BBBP_MISSING)


def check_bbbp(params):
    from ddpx.plugins.smiles.data import check_smiles_params

    check_smiles_params(params, bbbp_default_path, BBBP_MISSING)


def build_smiles_csv(request):
    from ddpx.plugins.smiles.data import build_smiles_data

    return build_smiles_data(request, no_default_path, CSV_MISSING)


def check_smiles_csv(params):
    from ddpx.plugins.smiles.data import check_smiles_params

    check_smiles_params(params, no_default_path, CSV_MISSING)


MODEL_PARAMS = {
    "embedding_dim": Param(128, "token embedding width", minimum=1),
    "d_model": Param(128, "recurrent hidden width", minimum=1),
    "num_layers": Param(3, "recurrent layers", minimum=1),
    "bidirectional": Param(True, "read the SMILES in both directions"),
    "dropout": Param(0.2, "dropout between layers and before the head", minimum=0, below=1),
    "cell": Param("lstm", "recurrent cell", choices=("lstm", "gru")),
}


def build_model(params, info):
    from ddpx.plugins.smiles.model import SmilesRNN

    return SmilesRNN(len(info["vocab"]), pad_id=info["pad_id"], **params)


def _predict_table(model, info, table):
    from ddpx.plugins.smiles.predict import predict_table

    return predict_table(model, info, table)


def _example_table(info):
    from ddpx.plugins.smiles.predict import example_table

    return example_table(info)


PREDICTOR = TablePredictor(_predict_table, _example_table)  # a `smiles` column in, a `probability` out


@hookimpl
def register_tasks(register):
    register(TaskSpec("bbbp", "BBBP: does a molecule cross the blood-brain barrier? (MoleculeNet)", build_bbbp,
                      loss="bce_with_logits", metric="roc_auc", check=check_bbbp, predictor=PREDICTOR,
                      params=smiles_params(smiles_column="smiles", label_column="p_np", url=BBBP_URL)))
    register(TaskSpec("smiles_csv", "binary labels of molecules from any SMILES CSV", build_smiles_csv,
                      loss="bce_with_logits", metric="roc_auc", check=check_smiles_csv, predictor=PREDICTOR,
                      params=smiles_params(smiles_column="smiles", label_column="label", url="")))


@hookimpl
def register_models(register):
    register(ModelSpec("smiles_rnn", "embedding + bidirectional LSTM/GRU over packed SMILES tokens", build_model,
                       params=MODEL_PARAMS))


@hookimpl
def register_recipes(register):
    register(RecipeSource(Path(str(resources.files(__package__) / "recipes" / "bbbp_rnn.toml"))))
