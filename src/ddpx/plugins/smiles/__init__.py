"""SMILES tasks, the ``smiles_rnn`` model and the MoleculeNet recipes.

Binary classification of molecules from their SMILES strings, with one label or several.
MoleculeNet's classification files are tasks of their own (``bbbp``, ``bace``, ``clintox``,
``tox21``, ``sider``, ``hiv``: :mod:`ddpx.plugins.smiles.moleculenet`). Any other CSV with a
SMILES column and 0/1 label columns trains with one of their recipes: set ``dataset.path``,
``dataset.smiles_column``, and ``dataset.label_column`` (or ``dataset.label_columns``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ddpx.api import ModelSpec, Param, RecipeSource, TablePredictor, hookimpl

def smiles_params(*, smiles_column: str, label_column: str, url: str,
                  label_columns: list[str] | None = None) -> dict[str, Param]:
    return {
        "path": Param("", "the CSV file (empty: the task's default location)"),
        "smiles_column": Param(smiles_column, "column holding the SMILES strings"),
        "label_column": Param(label_column, "column holding the 0/1 labels"),
        "label_columns": Param(label_columns or [], "several 0/1 label columns, one logit each (empty or NaN cells "
                               "are missing labels, left out of loss and metric); empty: dataset.label_column"),
        "strict": Param(False, "refuse a file with bad rows instead of skipping them"),
        "download": Param(False, "download dataset.url when the file is missing (one process per machine)"),
        "url": Param(url, "where dataset.download fetches the file from", schemes=("http", "https")),
        "split": Param("random", "random (stratified) or scaffold (Bemis-Murcko, needs RDKit)", choices=("random", "scaffold")),
        "canonicalize": Param(False, "validate and canonicalise SMILES with RDKit (needs RDKit)"),
        "enumerate": Param(0, "randomised SMILES kept per training molecule (RDKit); each epoch a molecule is read "
                           "as one of them or as written; 0: as written only", minimum=0, maximum=64),
        "eval_enumerate": Param(0, "dev and held-out predictions average the written SMILES and this many "
                                "randomised ones (RDKit); 0: the written SMILES only", minimum=0, maximum=64),
        "heldout_fraction": Param(0.1, "fraction of molecules held out", above=0, below=1),
        "dev_fraction": Param(0.2, "fraction of the rest used for model selection", above=0, below=1),
    }


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

    return SmilesRNN(len(info["vocab"]), pad_id=info["pad_id"], num_labels=len(info.get("labels") or [None]), **params)


def _predict_table(model, info, table):
    from ddpx.plugins.smiles.predict import predict_table

    return predict_table(model, info, table)


def _example_table(info):
    from ddpx.plugins.smiles.predict import example_table

    return example_table(info)


PREDICTOR = TablePredictor(_predict_table, _example_table)  # a `smiles` column in, a `probability` out


@hookimpl
def register_tasks(register):
    from ddpx.plugins.smiles.moleculenet import moleculenet_tasks

    for task in moleculenet_tasks(smiles_params, PREDICTOR):
        register(task)


@hookimpl
def register_models(register):
    register(ModelSpec("smiles_rnn", "embedding + bidirectional LSTM/GRU over packed SMILES tokens", build_model,
                       params=MODEL_PARAMS))


@hookimpl
def register_recipes(register):
    for recipe in sorted((resources.files(__package__) / "recipes").iterdir(), key=lambda r: r.name):
        if recipe.name.endswith(".toml"):
            register(RecipeSource(Path(str(recipe))))
