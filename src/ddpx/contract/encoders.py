"""A model's encoder: the part a run can start from pretrained weights, and freeze for its first
epochs (``train.freeze_encoder_epochs``) while a fresh head learns on it.

A model declares it with :attr:`ModelSpec.encoder <ddpx.contract.specs.ModelSpec>`, an
:class:`EncoderSpec`: the submodule that is the encoder, the ``model.*`` key naming where its
weights come from, and how to read them. The core reads them twice: in the launching process
before any rank starts (so a source that is missing or does not fit this model is an error with
nothing started), and on every rank of a run that starts afresh (not one that resumes, nor one
given ``train.init_from``), before the model is wrapped, so every rank starts from the same
weights. Rank 0 then tags the run with :attr:`PretrainedEncoder.lineage`.

Plain data: importing this module imports neither torch nor mlflow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch


@dataclass(frozen=True)
class PretrainedEncoder:
    """Weights an encoder starts from: ``weights`` is the encoder submodule's state dict (keys
    relative to it), ``lineage`` the tags that record where they came from (the pretraining run,
    the file and its digest), ``description`` a few words for the console ("the MLflow run
    3f2a…", say)."""

    weights: Mapping[str, torch.Tensor]
    lineage: Mapping[str, str] = field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class EncoderSpec:
    """A model's encoder.

    ``module`` names the submodule (``model.get_submodule(module)``: ``"message_passing"``, say).
    ``key`` names the ``model.*`` key whose value says where pretrained weights come from
    (``"encoder_from"``: empty, a fresh encoder). ``load(params, tracking_uri)`` reads them for
    the resolved ``model.*`` keys ``params`` — ``tracking_uri`` is the run's ``--tracking-uri``
    (``None``: ``MLFLOW_TRACKING_URI`` or MLflow's default), for a source in a tracking store —
    and returns a :class:`PretrainedEncoder`, or ``None`` when the key is empty; a source that is
    missing, unreadable or made for another model (another size, another kind) is a
    :class:`~ddpx.contract.errors.UserError` naming the fix.
    """

    module: str
    key: str = ""
    load: Callable[[Mapping[str, Any], str | None], PretrainedEncoder | None] | None = None
