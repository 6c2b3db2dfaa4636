"""Checkpoints: the unwrapped model, optimizer, epoch, RNG states and tracking run id.

Written atomically (:mod:`ddpx.records.atomic_save`), so a crash or a full disk mid-write never
leaves a torn ``last.pt``. Read with ``torch.load(weights_only=True)``: a checkpoint that
needs arbitrary pickled objects is refused.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ddpx.contract.errors import UserError
from ddpx.records.atomic_save import save_atomically

FORMAT = "ddpx-checkpoint"
VERSION = 1
_WRAPPER_PREFIXES = ("module.", "_orig_mod.")


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The plain model inside DDP / DataParallel / torch.compile wrappers."""
    while True:
        if hasattr(model, "module") and isinstance(model.module, torch.nn.Module):
            model = model.module
        elif hasattr(model, "_orig_mod") and isinstance(model._orig_mod, torch.nn.Module):
            model = model._orig_mod
        else:
            return model


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


def rng_state() -> dict[str, Any]:
    """Every RNG state a run depends on, in a form ``weights_only`` loading accepts."""
    _np_kind, np_keys, np_pos, np_has_gauss, np_cached = np.random.get_state()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": {
            "keys": torch.from_numpy(np_keys.astype(np.int64)),
            "pos": int(np_pos),
            "has_gauss": int(np_has_gauss),
            "cached_gaussian": float(np_cached),
        },
        "python": random.getstate(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: Mapping[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np_state = state["numpy"]
    np.random.set_state(
        (
            "MT19937",
            np_state["keys"].numpy().astype(np.uint32),
            np_state["pos"],
            np_state["has_gauss"],
            np_state["cached_gaussian"],
        )
    )
    random.setstate(state["python"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: Path, state: Mapping[str, Any]) -> None:
    """Write ``state`` (plus the format marker) to ``path`` atomically."""
    save_atomically({"format": FORMAT, "version": VERSION, **state}, path, f"the checkpoint {path.name}")


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a ddpx checkpoint safely; anything else is a clear error naming the file."""
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
