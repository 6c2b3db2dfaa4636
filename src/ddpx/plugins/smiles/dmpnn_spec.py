"""The ``dmpnn`` model's registration: its ``model.*`` keys with Chemprop's defaults (those of
``chemprop train``), and the check that Chemprop is installed. Cheap to import: torch and Chemprop
are imported when a rank builds the model (:mod:`ddpx.plugins.smiles.dmpnn`)."""

from __future__ import annotations

from ddpx.api import EncoderSpec, ModelSpec, Param
from ddpx.plugins.smiles.params import UNCERTAINTY, uncertainty_loss

ACTIVATIONS = ("relu", "leakyrelu", "prelu", "tanh", "elu")  # chemprop.nn.utils.Activation

DMPNN_PARAMS = {
    "hidden_size": Param(300, "message-passing hidden width (chemprop --message-hidden-dim)", minimum=1),
    "depth": Param(3, "message-passing steps (chemprop --depth)", minimum=1),
    "dropout": Param(0.0, "dropout in message passing and the head (chemprop --dropout)", minimum=0, below=1),
    "message_bias": Param(False, "a bias in the message-passing layers (chemprop --message-bias)"),
    "undirected": Param(False, "pass messages on undirected bonds (chemprop --undirected)"),
    "atom_messages": Param(False, "pass messages on atoms instead of bonds (chemprop --atom-messages)"),
    "aggregation": Param(
        "norm",
        "atoms to molecule: norm (the sum divided by model.aggregation_norm), mean or sum (chemprop --aggregation)",
        choices=("norm", "mean", "sum"),
    ),
    "aggregation_norm": Param(100.0, "the norm aggregation's divisor (chemprop --aggregation-norm)", above=0),
    "batch_norm": Param(False, "batch normalisation of the molecule vectors (chemprop --batch-norm)"),
    "ffn_hidden_size": Param(300, "the head's hidden width (chemprop --ffn-hidden-dim)", minimum=1),
    "ffn_layers": Param(1, "the head's hidden layers (chemprop --ffn-num-layers)", minimum=0),
    "activation": Param(
        "relu", "activation in message passing and the head (chemprop --activation)", choices=ACTIVATIONS
    ),
    "uncertainty": UNCERTAINTY,
    "encoder_from": Param(
        "",
        "start the message passing from a pretrained encoder, with a new head: a ddpx run folder (or its "
        "model/), an MLflow run or model URI (runs:/RUN_ID, models:/NAME/VERSION) or a Chemprop model file "
        "(.pt, .ckpt: CheMeleon's too); empty: fresh weights",
    ),
}


def _build(params, info):
    from ddpx.plugins.smiles.dmpnn import build_dmpnn

    return build_dmpnn(params, info)


def _load_encoder(params, tracking_uri):
    from ddpx.plugins.smiles.encoder_source import pretrained_encoder

    return pretrained_encoder(params, tracking_uri)


def _check(params):
    from ddpx.plugins.smiles.chemprop_check import require_chemprop

    require_chemprop("model.name=dmpnn")


DMPNN_MODEL = ModelSpec(
    "dmpnn",
    "Chemprop's D-MPNN: bond message passing over molecular graphs, aggregation, "
    "feed-forward head (Chemprop's own modules)",
    _build,
    params=DMPNN_PARAMS,
    inputs="molecule_graph",
    check=_check,
    imports=("chemprop",),
    loss_for=uncertainty_loss,
    encoder=EncoderSpec("message_passing", key="encoder_from", load=_load_encoder),
)
