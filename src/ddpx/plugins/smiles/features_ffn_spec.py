"""The ``features_ffn`` model's registration: its ``model.*`` keys and the check that Chemprop is
installed. Cheap to import: torch and Chemprop are imported when a rank builds the model
(:mod:`ddpx.plugins.smiles.features_ffn`)."""

from __future__ import annotations

from ddpx.api import ModelSpec, Param
from ddpx.plugins.smiles.dmpnn_spec import ACTIVATIONS
from ddpx.plugins.smiles.params import UNCERTAINTY, uncertainty_loss

FEATURES_FFN_PARAMS = {
    "hidden_size": Param(300, "hidden width of the feed-forward layers (chemprop --ffn-hidden-dim)", minimum=1),
    "layers": Param(2, "hidden layers (chemprop --ffn-num-layers)", minimum=0),
    "dropout": Param(0.0, "dropout between layers, not on the input (chemprop --dropout)", minimum=0, below=1),
    "activation": Param("relu", "activation between layers (chemprop --activation)", choices=ACTIVATIONS),
    "uncertainty": UNCERTAINTY,
}


def _build(params, info):
    from ddpx.plugins.smiles.features_ffn import build_features_ffn

    return build_features_ffn(params, info)


def _check(params):
    from ddpx.plugins.smiles.chemprop_check import require_chemprop

    require_chemprop("model.name=features_ffn")


FEATURES_FFN_MODEL = ModelSpec(
    "features_ffn",
    "Chemprop's feed-forward head over molecule-level features alone "
    "(RDKit descriptors, Morgan fingerprints; dataset.molecule_features)",
    _build,
    params=FEATURES_FFN_PARAMS,
    inputs="molecule_features",
    check=_check,
    imports=("chemprop",),
    loss_for=uncertainty_loss,
)
