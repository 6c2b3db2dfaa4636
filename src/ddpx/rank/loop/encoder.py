"""The model's encoder (``ModelSpec.encoder``): pretrained weights at a fresh start, and the first
``train.freeze_encoder_epochs`` epochs with it frozen.

**Starting.** A run that starts afresh (not resumed, no ``train.init_from``) whose encoder key
names a source reads it on every rank (``EncoderSpec.load``) and loads it into the plain model
before it is wrapped: every rank starts from the same weights, the head from its seeded fresh
ones. Rank 0 tags the run with where they came from (``PretrainedEncoder.lineage``).

**Freezing.** While the encoder is frozen its gradients are still computed — DDP's all-reduce
expects a gradient for every parameter it holds — and are dropped before each optimizer step
(set to ``None``: the optimizer skips the parameter, leaving its weights, moments and weight
decay untouched), so the encoder's weights after the frozen epochs are the ones it started
with, bit for bit, and its optimizer state starts when it starts learning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ddpx.contract.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.rank.run_context import RunContext


def start_encoder(run: RunContext, model: torch.nn.Module) -> None:
    """Load the pretrained encoder the recipe names into ``model`` (the plain model); rank 0 says so
    and tags the run with its lineage."""
    encoder, train = run.parts.model.encoder, run.train
    if encoder is None or encoder.load is None or run.resume is not None or train["init_from"]:
        return
    params = {k: v for k, v in run.job.config["model"].items() if k != "name"}
    start = encoder.load(params, run.job.launch.tracking_uri)
    if start is None:
        return
    try:
        model.get_submodule(encoder.module).load_state_dict(dict(start.weights))
    except RuntimeError as exc:
        first = " ".join(str(exc).splitlines()[:2])
        raise UserError(
            f"model.{encoder.key} does not fit this model's encoder ({encoder.module}): {first} "
            "Point it to an encoder of the same model settings."
        ) from None
    if run.env.is_main:
        frozen = train["freeze_encoder_epochs"]
        held = f", frozen for the first {frozen} epoch(s)" if frozen else ""
        run.console.print(f"the encoder ({encoder.module}) starts from {start.description}{held}; the head is new")
        if run.tracker is not None:
            run.tracker.set_tags(dict(start.lineage))


def encoder_frozen(run: RunContext) -> bool:
    """Whether the epoch being trained is one of the first ``train.freeze_encoder_epochs``."""
    frozen = run.train.get("freeze_encoder_epochs", 0)
    return bool(frozen) and run.state.position.epoch < frozen and run.parts.model.encoder is not None


def drop_frozen_gradients(run: RunContext) -> None:
    """While the encoder is frozen, its gradients are dropped before the optimizer step."""
    if not encoder_frozen(run):
        return
    for parameter in run.state.model.get_submodule(run.parts.model.encoder.module).parameters():
        parameter.grad = None
