"""A checkpoint file: its format, reading it safely (weights into a model too), and whether a run
can continue from it.

Both sides read checkpoints: the launching process checks ``--resume PATH``, ``--resume auto``'s
last run and ``train.init_from`` before any rank starts (``ddpx.launch.plan``), and every rank
reads the one it continues from. Written atomically (:mod:`ddpx.records.atomic_save`), so a crash
or a full disk mid-write never leaves a torn ``last.pt``. Read with
``torch.load(weights_only=True)``: a checkpoint that needs arbitrary pickled objects is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddpx.contract.errors import UserError
from ddpx.records.atomic_save import save_atomically

if TYPE_CHECKING:  # pragma: no cover
    import torch

FORMAT = "ddpx-checkpoint"
VERSION = 1
_WRAPPER_PREFIXES = ("module.", "_orig_mod.")


def strip_wrapper_prefixes(state: Mapping[str, Any]) -> dict[str, Any]:
    """Drop ``module.`` (DDP) and ``_orig_mod.`` (torch.compile) prefixes from state-dict keys."""
    cleaned = {}
    for key, value in state.items():
        changed = True
        while changed:
            changed = False
            for prefix in _WRAPPER_PREFIXES:
                if key.startswith(prefix):
                    key, changed = key[len(prefix) :], True
        cleaned[key] = value
    return cleaned


def save_checkpoint(path: Path, state: Mapping[str, Any]) -> None:
    """Write ``state`` (plus the format marker) to ``path`` atomically."""
    save_atomically({"format": FORMAT, "version": VERSION, **state}, path, f"the checkpoint {path.name}")


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a ddpx checkpoint safely; anything else is a clear error naming the file."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise UserError(f"checkpoint '{path}' does not exist. Point to a last.pt or best.pt in a ddpx run folder.")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        reason = type(exc).__name__
        refused = re.search(r"Unsupported global: GLOBAL [\w.]+", str(exc))  # a pickled object, refused
        if refused:
            reason += f": {refused.group(0)}"
        raise UserError(
            f"checkpoint '{path}' cannot be read safely ({reason}). It is corrupt, truncated, not a PyTorch file, "
            "or holds pickled objects; ddpx loads only tensors and plain values (torch.load weights_only=True). "
            "Point --resume or train.init_from to a last.pt or best.pt written by ddpx, or to a plain state dict."
        ) from None
    if not isinstance(state, dict):
        raise UserError(f"checkpoint '{path}' holds a {type(state).__name__}, not a state dict or a ddpx checkpoint.")
    return state


def model_state_from(state: Mapping[str, Any]) -> dict[str, Any]:
    """The model weights in a ddpx checkpoint, or in a plain (possibly DDP-saved) state dict."""
    weights = state["model"] if state.get("format") == FORMAT else state
    return strip_wrapper_prefixes(weights)


def check_init_fits(state: dict[str, Any], source: Path | str, config: dict[str, Any]) -> None:
    """A ddpx checkpoint given as ``train.init_from`` holds this recipe's model (its ``model.*``
    keys fix every weight's shape); a plain state dict is checked when the model loads it."""
    written_for = state.get("recipe", {}).get("model") if isinstance(state.get("recipe"), dict) else None
    if written_for is not None and written_for != config["model"]:
        differ = sorted(
            k for k in set(written_for) | set(config["model"]) if written_for.get(k) != config["model"].get(k)
        )
        shown = ", ".join(f"model.{k}={written_for.get(k)!r} there, {config['model'].get(k)!r} here" for k in differ)
        raise UserError(
            f"train.init_from '{source}' was written for another model ({shown}); its weights cannot "
            "start this one. Use a checkpoint of the same model, or set the model keys to match."
        )


def check_resumable(
    state: dict[str, Any], source: Path | str, config: dict[str, Any], sharded: bool | None = None
) -> None:
    """A checkpoint a run can continue from: ddpx's training state, for this recipe's model, and
    sharded when this recipe's wrapper shards (``sharded``, when known)."""
    missing = ({"epoch", "ranks"} if state.get("sharded") else {"model", "optimizer", "epoch", "ranks"}) - set(state)
    if missing:
        raise UserError(
            f"checkpoint '{source}' cannot resume a run: it lacks {', '.join(sorted(missing))}. "
            "Use a last.pt written by ddpx, or start the run afresh."
        )
    written = state.get("recipe", {})  # the recipe the checkpoint was written with
    if written.get("model") != config["model"]:
        raise UserError(
            f"checkpoint '{source}' was written for another model ({written.get('model')}); "
            "resume it with the recipe that wrote it."
        )
    written_by = written.get("train", {}).get("select_by", "metric")
    if written_by != config["train"]["select_by"]:
        raise UserError(
            f"checkpoint '{source}' kept its best epoch by train.select_by={written_by}, and this run "
            f"asks for train.select_by={config['train']['select_by']}: the best so far would mix the two "
            f"rules. Resume it with train.select_by={written_by}, or start the run afresh."
        )
    written_size, size = written.get("train", {}).get("ensemble_size", 1), config["train"].get("ensemble_size", 1)
    if written_size != size:
        raise UserError(
            f"checkpoint '{source}' was written by a run of train.ensemble_size={written_size}, and this run "
            f"asks for train.ensemble_size={size}: its members and their seeds would not match. Resume it with "
            f"train.ensemble_size={written_size}, or start the run afresh."
        )
    if sharded is not None and bool(state.get("sharded")) != sharded:
        wrapper = written.get("train", {}).get("wrapper", "another wrapper")
        raise UserError(
            f"checkpoint '{source}' holds {'sharded' if state.get('sharded') else 'whole'} weights and "
            f"optimizer state (written with train.wrapper={wrapper}), which train.wrapper="
            f"{config['train']['wrapper']} cannot continue. Resume it with train.wrapper={wrapper}."
        )


def load_model_weights(model: torch.nn.Module, path: str | Path) -> None:
    """Load the weights of checkpoint ``path`` into ``model``; a mismatch is a clear error."""
    weights = model_state_from(load_checkpoint(path))
    try:
        model.load_state_dict(weights)
    except RuntimeError as exc:
        first = str(exc).splitlines()[0:2]
        raise UserError(
            f"checkpoint '{path}' does not fit this model: {' '.join(first)} "
            "Use a checkpoint saved by the same recipe and model settings."
        ) from None
