"""Reading a D-MPNN's encoder (its message passing) out of the files that hold one: a ddpx run's
``model/`` folder or checkpoint, and Chemprop's model files.

**Chemprop's files.** ``chemprop train`` and ``chemprop.models.utils.save_model`` write
``{"hyper_parameters", "state_dict"}`` (a Lightning ``.ckpt`` holds the same two keys among
others): the whole MPNN, its message passing under ``message_passing.``. A foundation model's
message passing alone (CheMeleon's ``chemeleon_mp.pt``) is the same two keys for the
``BondMessagePassing`` only. ddpx's ``dmpnn`` is built from Chemprop's own ``BondMessagePassing``,
so the weights load as they are.

**Read safely.** Chemprop's hyperparameters are pickled objects (its classes, an activation, a
Lightning ``AttributeDict``, metrics). They are read with ``torch.load(weights_only=True)``, every
class the file names replaced by an inert stand-in that only keeps its arguments (Lightning's
``AttributeDict`` by a plain ``dict``): nothing of the file's is imported or run, and the values
ddpx needs (sizes, depth, the activation's name) are plain values inside.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ddpx.api import UserError, load_checkpoint, model_state_from

PREFIX = "message_passing."
CHEMPROP_KEYS = {"d_h": "hidden_size", "depth": "depth", "bias": "message_bias", "undirected": "undirected"}


@dataclass
class EncoderFile:
    """What a source holds: its kind, the model it was trained as (ddpx's ``model.name``,
    "dmpnn" for Chemprop's), the encoder's settings in ddpx's key names, the atom and bond
    feature widths it reads (when recorded), its weights (keys relative to the encoder) and where
    it came from (tags)."""

    kind: str
    model: str
    keys: dict[str, Any]
    weights: dict[str, torch.Tensor]
    widths: tuple[int, int] | None = None
    lineage: dict[str, str] = field(default_factory=dict)


def encoder_weights(state: dict[str, Any], prefix: str = PREFIX) -> dict[str, torch.Tensor]:
    return {key[len(prefix) :]: value for key, value in state.items() if key.startswith(prefix)}


def from_model_folder(folder: Path, kind: str) -> EncoderFile:
    """A ddpx ``model/`` folder: ``model.json`` and the weights-only ``state_dict.pt``."""
    spec = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    state = torch.load(folder / "state_dict.pt", map_location="cpu", weights_only=True)
    info = spec.get("task_info") or {}
    widths = (info["atom_features"], info["bond_features"]) if "atom_features" in info else None
    keys = dict(spec.get("model") or {})
    lineage = {"ddpx.encoder_from.task": str(spec.get("task", ""))}
    return EncoderFile(kind, keys.pop("name", ""), keys, encoder_weights(state), widths, lineage)


def from_checkpoint(state: dict[str, Any]) -> EncoderFile:
    """A ddpx checkpoint (``best.pt``, ``last.pt``): the recipe it was written with, its weights."""
    recipe = state.get("recipe") if isinstance(state.get("recipe"), dict) else {}
    keys = dict(recipe.get("model") or {})
    lineage = {
        "ddpx.encoder_from.task": str(recipe.get("task", "")),
        "ddpx.encoder_from.recipe": str(recipe.get("name", "")),
    }
    return EncoderFile(
        "ddpx checkpoint", keys.pop("name", ""), keys, encoder_weights(model_state_from(state)), None, lineage
    )


def _activation(value: Any) -> str:
    """Chemprop's activation (an ``Activation`` member, read as a stand-in with its value, or a string)."""
    value = getattr(value, "value", None) or (getattr(value, "args", None) or [value])[0]
    return str(value).lower()


def from_chemprop(saved: dict[str, Any]) -> EncoderFile:
    """Chemprop's model file (the whole MPNN) or a message-passing file (a foundation model's)."""
    hparams = saved["hyper_parameters"]
    whole = isinstance(hparams.get("message_passing"), dict)
    passing = hparams["message_passing"] if whole else hparams
    keys = {ours: passing[theirs] for theirs, ours in CHEMPROP_KEYS.items() if theirs in passing}
    keys["activation"] = _activation(passing.get("activation", "relu"))
    kind_of = getattr(passing.get("cls"), "__name__", "BondMessagePassing")
    keys["atom_messages"] = kind_of == "AtomMessagePassing"
    widths = (passing["d_v"], passing["d_e"]) if "d_v" in passing and "d_e" in passing else None
    state = saved["state_dict"]
    weights = encoder_weights(state) if whole else {key: value for key, value in state.items()}
    kind = "Chemprop model file" if whole else "Chemprop message-passing file"
    model = "dmpnn" if kind_of in ("BondMessagePassing", "AtomMessagePassing") else kind_of
    return EncoderFile(kind, model, keys, weights, widths, {})


class _StandIn:
    """What a class named in a Chemprop file becomes: it keeps its arguments and state, runs nothing."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs

    def __setstate__(self, state):
        self.state = state


def _stand_in(name: str):
    if name.rsplit(".", 1)[-1] == "AttributeDict":  # Lightning's dict of hyperparameters
        return dict
    module, _, qualname = name.rpartition(".")
    return type(qualname, (_StandIn,), {"__module__": module})


def read_torch_file(path: Path) -> dict[str, Any]:
    """A ``torch.save`` file's dict, read with ``weights_only=True``: a ddpx checkpoint as it is, a
    Chemprop file with its classes as inert stand-ins."""
    import pickle

    try:
        return load_checkpoint(path)
    except UserError:
        pass
    try:
        names = torch.serialization.get_unsafe_globals_in_checkpoint(path)
        with torch.serialization.safe_globals([(_stand_in(name), name) for name in names]):
            saved = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, OSError, ValueError, EOFError, AttributeError) as exc:
        raise UserError(
            f"model.encoder_from '{path}' cannot be read as a model file ({type(exc).__name__}). Give a ddpx run "
            "folder, its model/ folder or a checkpoint, an MLflow run or model URI, or a Chemprop model file "
            "(.pt, .ckpt)."
        ) from None
    if not isinstance(saved, dict):
        raise UserError(f"model.encoder_from '{path}' holds a {type(saved).__name__}, not a model file's dict.")
    return saved


def from_file(path: Path) -> EncoderFile:
    """A model file: a ddpx checkpoint, or one of Chemprop's."""
    saved = read_torch_file(path)
    if saved.get("format") == "ddpx-checkpoint":
        return from_checkpoint(saved)
    if isinstance(saved.get("hyper_parameters"), dict) and isinstance(saved.get("state_dict"), dict):
        return from_chemprop(saved)
    raise UserError(
        f"model.encoder_from '{path}' is neither a ddpx checkpoint nor a Chemprop model file (it has "
        f"{', '.join(map(str, list(saved)[:6])) or 'no keys'}). Give a ddpx run folder, an MLflow run or model "
        "URI, or a file Chemprop saved (chemprop train's model .pt or .ckpt, or a foundation model's .pt)."
    )
