"""``model.encoder_from``: where a ``dmpnn``'s encoder starts from, read and checked.

A source is a ddpx run folder (its ``model/``, else ``checkpoints/best.pt``), a ``model/`` folder,
a ddpx checkpoint, an MLflow run (``runs:/RUN_ID``, ``runs:/RUN_ID/model`` or the bare run id) or
model (``models:/NAME/VERSION``, ``models:/m-…``) of the tracking store, or a Chemprop model file
(:mod:`~ddpx.plugins.smiles.encoder_files`). It must hold a D-MPNN's message passing of this
run's settings: the same ``model.hidden_size``, ``model.depth``, ``model.atom_messages``,
``model.message_bias``, ``model.undirected`` and ``model.activation``, reading Chemprop's default
atom and bond features. Anything else — a missing path, another model (a SMILES BiLSTM),
another size or depth — is a :class:`UserError` naming the fix, raised before any rank starts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ddpx.api import PretrainedEncoder, UserError, weights_sha256

ARCHITECTURE = ("hidden_size", "depth", "atom_messages", "message_bias", "undirected", "activation")
RUN_ID = re.compile(r"^[0-9a-f]{32}$")
SOURCES = (
    "a ddpx run folder (or its model/ folder, or a checkpoint), an MLflow run or model URI (runs:/RUN_ID, "
    "models:/NAME/VERSION), or a Chemprop model file (.pt, .ckpt)"
)
MODELS = {"smiles_rnn": "a SMILES BiLSTM/GRU", "features_ffn": "a feed-forward network on molecule features"}


def is_mlflow(source: str) -> bool:
    return source.startswith(("runs:/", "models:/")) or bool(RUN_ID.match(source))


def read_source(source: str, tracking_uri: str | None):
    """The :class:`~ddpx.plugins.smiles.encoder_files.EncoderFile` ``source`` names."""
    from ddpx.plugins.smiles import encoder_files

    path = Path(source).expanduser()
    if path.is_dir():
        return _from_folder(path)
    if path.is_file():
        if path.name == "state_dict.pt" and (path.parent / "model.json").is_file():
            return encoder_files.from_model_folder(path.parent, "ddpx model folder")
        return encoder_files.from_file(path)
    if is_mlflow(source):
        from ddpx.plugins.smiles.encoder_mlflow import from_mlflow

        return from_mlflow(source, tracking_uri)
    raise UserError(f"model.encoder_from '{source}' does not exist. Give {SOURCES}.")


def _from_folder(path: Path):
    from ddpx.plugins.smiles import encoder_files

    if (path / "model" / "model.json").is_file():
        found = encoder_files.from_model_folder(path / "model", "ddpx run folder")
    elif (path / "model.json").is_file():
        return encoder_files.from_model_folder(path, "ddpx model folder")
    elif (path / "checkpoints" / "best.pt").is_file():
        found = encoder_files.from_file(path / "checkpoints" / "best.pt")
        found.kind = "ddpx run folder"
    else:
        raise UserError(
            f"model.encoder_from '{path}' is a folder without a model: a ddpx run folder holds model/ (or "
            f"checkpoints/best.pt). Give {SOURCES}."
        )
    found.lineage.update(_run_folder_lineage(path))
    return found


def _run_folder_lineage(path: Path) -> dict[str, str]:
    """The run's MLflow run id (``tracking.json``) and recipe (``job.json``), where they are."""
    import json

    lineage = {}
    for name, record, key in (("run_id", "tracking.json", "run_id"), ("recipe", "job.json", "recipe_name")):
        try:
            value = json.loads((path / record).read_text(encoding="utf-8"))[key]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if value:
            lineage[f"ddpx.encoder_from.{name}"] = str(value)
    return lineage


def check_fits(found, params: Mapping[str, Any], source: str) -> None:
    """The source's encoder can start this run's: a D-MPNN's, of the same settings and shapes."""
    if found.model != "dmpnn":
        what = MODELS.get(found.model, f"model {found.model or 'unknown'}")
        raise UserError(
            f"model.encoder_from '{source}' holds {what} (model.name={found.model}), not a D-MPNN: only a D-MPNN's "
            "message passing can start this model's encoder. Point it to a run of a *_dmpnn recipe (such as "
            "moses_pretrain_dmpnn) or a Chemprop model file."
        )
    differ = [key for key in ARCHITECTURE if key in found.keys and found.keys[key] != params[key]]
    if differ:
        theirs = " ".join(f"model.{key}={_shown(found.keys[key])}" for key in differ)
        ours = ", ".join(f"model.{key}={_shown(params[key])}" for key in differ)
        raise UserError(
            f"model.encoder_from '{source}' holds an encoder trained with {theirs.replace(' ', ', ')}, and this run "
            f"has {ours}: its weights cannot start this model. Add {theirs} to the command (the head may stay as "
            "it is), or point model.encoder_from to an encoder of this size."
        )
    _check_shapes(found, params, source)


def _shown(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _check_shapes(found, params: Mapping[str, Any], source: str) -> None:
    from ddpx.plugins.smiles.dmpnn import build_message_passing
    from ddpx.plugins.smiles.graph_store import featurizer

    one = featurizer()
    if found.widths is not None and tuple(found.widths) != (one.atom_fdim, one.bond_fdim):
        raise UserError(
            f"model.encoder_from '{source}' reads graphs of {found.widths[0]} atom and {found.widths[1]} bond "
            f"features, and ddpx featurizes with Chemprop's default featurizer ({one.atom_fdim} and "
            f"{one.bond_fdim}): an encoder trained on other atom features cannot start this one. Use one trained "
            "with Chemprop's default (V2) featurizer."
        )
    expected = {
        key: tuple(value.shape)
        for key, value in build_message_passing(params, *(one.atom_fdim, one.bond_fdim)).state_dict().items()
    }
    given = {key: tuple(value.shape) for key, value in found.weights.items()}
    if given != expected:
        wrong = sorted(set(given) ^ set(expected)) or [k for k in expected if expected[k] != given[k]]
        raise UserError(
            f"model.encoder_from '{source}' holds message-passing weights that do not fit this model's "
            f"({', '.join(wrong[:4])} differ: {', '.join(f'{k} {given.get(k)} there, {expected.get(k)} here' for k in wrong[:2])}). "
            "Use an encoder of this model's settings."
        )


def digest(weights: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the encoder weights' :func:`~ddpx.api.weights_sha256`, to say
    which weights a run started from."""
    return weights_sha256(weights)[:16]


def pretrained_encoder(params: Mapping[str, Any], tracking_uri: str | None) -> PretrainedEncoder | None:
    """The encoder ``model.encoder_from`` names, checked against this run's ``model.*`` keys; ``None``
    when it is empty."""
    source = str(params.get("encoder_from") or "")
    if not source:
        return None
    found = read_source(source, tracking_uri)
    check_fits(found, params, source)
    lineage = {
        "ddpx.encoder_from": source,
        "ddpx.encoder_from.kind": found.kind,
        "ddpx.encoder_from.sha256": digest(found.weights),
        **{key: value for key, value in found.lineage.items() if value},
    }
    run = found.lineage.get("ddpx.encoder_from.run_id")
    description = f"the {found.kind} {source}" + (f" (MLflow run {run})" if run and run not in source else "")
    return PretrainedEncoder(weights=found.weights, lineage=lineage, description=description)
