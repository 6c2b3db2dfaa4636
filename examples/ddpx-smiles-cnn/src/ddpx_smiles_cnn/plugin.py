"""The ddpx plugin of ddpx-smiles-cnn: a model and a recipe, through ddpx's hooks.

The model asks ddpx's SMILES tasks for token sequences (``inputs="smiles_tokens"``), the form the
built-in BiLSTM reads, so every SMILES task (MoleculeNet's sets, a user's own CSV) trains it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ddpx.api import ModelSpec, Param, RecipeSource, hookimpl

MODEL_PARAMS = {
    "embedding_dim": Param(64, "size of each token's embedding", minimum=1),
    "filters": Param(128, "convolution filters per kernel width", minimum=1),
    "max_width": Param(7, "convolutions of every odd width from 3 tokens to this one", minimum=3),
    "dropout": Param(0.2, "dropout before the head", minimum=0),
}


def build_smiles_cnn(params, info):
    from ddpx_smiles_cnn.model import SmilesCNN

    scaler = info.get("target_scaler")  # regression tasks: each target's training mean and deviation
    return SmilesCNN(
        vocab_size=len(info["vocab"]),
        pad_id=info["pad_id"],
        num_outputs=len(info.get("labels") or [None]),
        scaler=(scaler["mean"], scaler["std"]) if scaler else None,
        widths=list(range(3, params["max_width"] + 1, 2)),
        embedding_dim=params["embedding_dim"],
        filters=params["filters"],
        dropout=params["dropout"],
    )


@hookimpl
def register_models(register):
    register(
        ModelSpec(
            "smiles_cnn",
            "embedding + 1-D convolutions of several widths over SMILES tokens, max-pooled",
            build_smiles_cnn,
            params=MODEL_PARAMS,
            inputs="smiles_tokens",
        )
    )


@hookimpl
def register_recipes(register):
    folder = resources.files("ddpx_smiles_cnn") / "recipes"
    register(RecipeSource(Path(str(folder / "bbbp_smiles_cnn.toml"))))
