"""SMILES tasks, the ``smiles_rnn``, ``dmpnn`` and ``features_ffn`` models and the MoleculeNet recipes.

Molecules from their SMILES strings, with one label or several (binary classification) or one
target or several (regression). MoleculeNet's files are tasks of their own (``bbbp``, ``bace``,
``clintox``, ``tox21``, ``sider``, ``hiv``, ``esol``, ``lipophilicity``, ``freesolv``:
:mod:`ddpx.plugins.smiles.moleculenet`); any other CSV trains with ``smiles_csv``
(:mod:`ddpx.plugins.smiles.own_csv`). Every task hands out token sequences, molecular graphs or
molecule-level feature vectors, whichever the model asks for (``ModelSpec.inputs``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ddpx.api import ModelSpec, RecipeSource, TablePredictor, hookimpl
from ddpx.plugins.smiles.params import MODEL_PARAMS, smiles_params, uncertainty_loss


def build_model(params, info):
    from ddpx.plugins.smiles.model import build_smiles_rnn

    return build_smiles_rnn(params, info)


def _predict_table(model, info, table):
    from ddpx.plugins.smiles.predict import predict_table

    return predict_table(model, info, table)


def _example_table(info):
    from ddpx.plugins.smiles.predict import example_table

    return example_table(info)


PREDICTOR = TablePredictor(_predict_table, _example_table)  # a `smiles` column in; a probability or a value out


@hookimpl
def register_tasks(register):
    from ddpx.plugins.smiles.moleculenet import moleculenet_tasks
    from ddpx.plugins.smiles.own_csv import own_csv_task
    from ddpx.plugins.smiles.pretraining import moses_task

    for task in moleculenet_tasks(smiles_params, PREDICTOR):
        register(task)
    register(own_csv_task(smiles_params, PREDICTOR))
    register(moses_task(PREDICTOR))


@hookimpl
def register_models(register):
    from ddpx.plugins.smiles.dmpnn_spec import DMPNN_MODEL
    from ddpx.plugins.smiles.features_ffn_spec import FEATURES_FFN_MODEL

    register(
        ModelSpec(
            "smiles_rnn",
            "embedding + bidirectional LSTM/GRU over packed SMILES tokens",
            build_model,
            params=MODEL_PARAMS,
            inputs="smiles_tokens",
            loss_for=uncertainty_loss,
        )
    )
    register(DMPNN_MODEL)
    register(FEATURES_FFN_MODEL)


@hookimpl
def register_recipes(register):
    folder = resources.files(__package__) / "recipes"  # presets/: the bases the recipes extend
    for recipe in sorted([*folder.iterdir(), *(folder / "presets").iterdir()], key=lambda r: r.name):
        if recipe.name.endswith(".toml"):
            register(RecipeSource(Path(str(recipe))))
