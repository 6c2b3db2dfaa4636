"""The components plugins register through the ``register_*`` hooks, one spec per kind.

Everything here is plain data: importing this module imports neither torch nor mlflow, so plugins can describe
their components cheaply and build the heavy parts only when a run asks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddpx.contract.encoders import EncoderSpec
from ddpx.contract.launch_specs import BackendSpec, LauncherSpec, LaunchOption, LaunchOutcome
from ddpx.contract.records import DataRequest, DatasetRecord, Param, TaskData
from ddpx.contract.tracker_specs import Tracker, TrackerSpec

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np
    import torch
    from torch.utils.data import Sampler

    from ddpx.contract.job import Job


@dataclass(frozen=True)
class TablePredictor:
    """How a trained model of a task answers a table of rows: ``ddpx predict`` and the MLflow model.

    ``predict(model, info, table)`` takes the eval-mode model, :attr:`TaskData.info` and a pandas ``DataFrame`` of
    inputs (a ``smiles`` column, say) and returns a ``DataFrame`` of outputs (a ``probability`` column, say); a table
    it cannot read is a :class:`UserError` naming the columns it needs, rows it cannot read are left empty with a
    reason in a ``problem`` column (``ddpx predict`` counts them). ``example(info)`` is a small input table: the
    logged model's example. ``ddpx predict --coverage`` reads ``prediction`` (and a variance head's ``variance``) or
    ``probability`` columns, ``_<label>`` after each name for several labels, to add intervals or sets after them.
    """

    predict: Callable[[Any, Mapping[str, Any], Any], Any]
    example: Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class TaskSpec:
    """A learning problem: how to build its data, its loss and the metric that judges it.

    ``loss`` is ``"cross_entropy"`` (integer class targets, logits of shape ``(N, C)``) or ``"bce_with_logits"`` (0/1
    targets, logits of shape ``(N,)``). ``metric`` names a registered metric, used for model selection on the dev
    split and reported on held-out. ``params`` declares the task's ``dataset.*`` keys. ``check(params)`` — or
    ``check(params, world_size)`` when it needs the number of ranks, or ``check(params, world_size, inputs)`` when it
    needs the model's input form (:attr:`ModelSpec.inputs`, "" when the model names none) — runs in the launching
    process before any rank starts and raises :class:`~ddpx.contract.errors.UserError` for settings that cannot work
    (a missing or unreadable file, a missing optional dependency, fewer training samples than ranks).
    ``train_samples(params)``, when the task can tell before launch how many training samples its ``dataset.*`` keys
    give (a generated dataset), returns that number: ddpx then refuses a ``train.batch_size`` larger than each rank's
    share, a batch that could never fill. ``predictor`` (a :class:`TablePredictor`) lets the trained model answer
    tables: ``ddpx predict``, and the best model logged as an MLflow model.

    ``inputs`` names the forms of input the task can hand out, its default first (the SMILES
    tasks: ``("smiles_tokens", "molecule_graph", "molecule_features")``). A model that needs one
    of them says so in :attr:`ModelSpec.inputs`; ``build_data`` then receives that name as
    :attr:`DataRequest.inputs` and builds its splits in that form (a model whose form the task
    cannot give is refused before anything starts).

    ``judged_by(params)``, for a task whose kind depends on its ``dataset.*`` keys (a user's own
    file, classification or regression), returns the ``(loss, metric)`` (or ``(loss, metric, heldout_metrics)``)
    those keys give, used instead of the fields (:meth:`for_params`). Losses: also ``"mse"`` (numeric targets ``(N,)``
    or ``(N, T)``, NaN cells left out), or a model's (:attr:`ModelSpec.loss_for`). ``heldout_metrics``: more metrics
    over the held-out predictions, recorded as ``heldout_<name>`` beside the metric.

    ``imports`` names modules slow to import that every rank imports to build the data (``"sklearn.model_selection"``
    for a split): a launcher that forks its ranks from one process (``spawn``) imports them there once, as a model's
    :attr:`ModelSpec.imports`."""

    name: str
    description: str
    build_data: Callable[[DataRequest], TaskData]
    loss: str
    metric: str
    params: Mapping[str, Param] = field(default_factory=dict)
    check: Callable[[Mapping[str, Any]], None] | None = None
    predictor: TablePredictor | None = None
    train_samples: Callable[[Mapping[str, Any]], int | None] | None = None
    inputs: tuple[str, ...] = ()
    judged_by: Callable[[Mapping[str, Any]], tuple] | None = None
    heldout_metrics: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()

    def for_params(self, params: Mapping[str, Any]) -> TaskSpec:
        """This task with the loss and metric its ``dataset.*`` keys give (itself when fixed)."""
        if self.judged_by is None:
            return self
        loss, metric, *more = self.judged_by(params)
        return replace(self, loss=loss, metric=metric, heldout_metrics=tuple(more[0]) if more else self.heldout_metrics)

    def input_for(self, model: ModelSpec) -> str:
        """The input form a run of ``model`` on this task gets ("" when the task names none)."""
        return model.inputs or (self.inputs[0] if self.inputs else "")


@dataclass(frozen=True)
class ModelSpec:
    """A model family: ``build(params, info)`` returns a ``torch.nn.Module`` for the resolved ``model.*`` keys
    ``params`` and :attr:`TaskData.info`. ``inputs`` names the form of input it needs (``"molecule_graph"``), one a
    task lists in :attr:`TaskSpec.inputs` (empty: the task's default). ``check(params)`` runs before any rank starts
    and raises :class:`~ddpx.contract.errors.UserError` for what cannot work (a missing optional dependency).
    ``imports`` names modules slow to import that every rank imports to build it (``"chemprop"``): a launcher that
    forks its ranks from one process (``spawn``) imports them there once. ``encoder`` (an
    :class:`~ddpx.contract.encoders.EncoderSpec`) is the part pretrained weights start and
    ``train.freeze_encoder_epochs`` freezes. ``loss_for(params, loss)``, for a model whose keys change what it
    answers, is the loss a run trains with on a task of loss ``loss`` (``"gaussian_nll"``: a variance head,
    :mod:`ddpx.contract.outputs`), or a ``UserError``.
    """

    name: str
    description: str
    build: Callable[[Mapping[str, Any], Mapping[str, Any]], torch.nn.Module]
    params: Mapping[str, Param] = field(default_factory=dict)
    inputs: str = ""
    check: Callable[[Mapping[str, Any]], None] | None = None
    imports: tuple[str, ...] = ()
    loss_for: Callable[[Mapping[str, Any], str], str] | None = None
    encoder: EncoderSpec | None = None


@dataclass(frozen=True)
class MetricSpec:
    """A held-out metric computed once over the complete, gathered split.

    ``compute(targets, outputs)`` receives numpy arrays: the targets and the model's raw
    outputs (logits), in dataset order. ``greater_is_better`` (``False`` for an error such as
    RMSE) is the metric's direction, and everything that picks or orders follows it: the best
    epoch and early stopping, a sweep's best trial, a search's direction and pruner, ``ddpx runs``
    and the MLflow view (runs carry it as the tag ``ddpx.metric_direction``).
    ``imports`` names modules ``compute`` imports (say ``"sklearn.metrics"``): the rank that
    computes the metric imports them while it starts, so that the first dev evaluation does not
    stop that rank for the import while the others wait, between the first and second epochs.
    """

    name: str
    description: str
    compute: Callable[[np.ndarray, np.ndarray], float]
    greater_is_better: bool = True
    imports: tuple[str, ...] = ()


@dataclass(frozen=True)
class SamplerSpec:
    """A training sampler: ``build(dataset, rank=, world_size=, seed=)`` returns a sampler
    with ``set_epoch(epoch)`` that gives each rank its share of the training split."""

    name: str
    description: str
    build: Callable[..., Sampler]


@dataclass(frozen=True)
class WrapperSpec:
    """How the model is made data-parallel (``train.wrapper``).

    ``wrap(model, device)`` receives the plain model, already on ``device``, after the process
    group is up, and returns the module the training step calls. It must make every rank start
    from the same weights and keep them equal (``train.check_sync=true`` verifies that). Keep the
    plain model as the wrapper's ``module`` attribute, so checkpoints hold its bare state dict.
    ``check(job)`` may raise :class:`~ddpx.contract.errors.UserError` before anything starts.
    Gradient accumulation (``train.accumulate``) runs every micro-batch but the last of a step
    inside the wrapped module's ``no_sync()`` context when it has one (DDP's), so gradients are
    synchronised once per optimizer step. ``sharded=True`` says each rank holds only a shard of
    the parameters (DTensors, as FSDP2 makes): ddpx then writes checkpoints with
    torch.distributed.checkpoint and gathers the best weights for export.
    """

    name: str
    description: str
    wrap: Callable[[torch.nn.Module, torch.device], torch.nn.Module]
    check: Callable[[Job], None] | None = None
    sharded: bool = False


@dataclass(frozen=True)
class RecipeSource:
    """A recipe file a plugin ships. Its name is the file's ``name`` key (or its stem)."""

    path: Path


@dataclass(frozen=True)
class OptimizerSpec:
    """An optimizer a recipe names with ``train.optimizer``: ``build(parameters, train)`` returns
    a ``torch.optim.Optimizer``; ``train`` is the resolved ``train.*`` section."""

    name: str
    description: str
    build: Callable[[Any, Mapping[str, Any]], torch.optim.Optimizer]


@dataclass(frozen=True)
class ScheduleSpec:
    """A learning-rate schedule a recipe names with ``train.lr_schedule``, stepped after every
    optimizer step: ``build(optimizer, train, total_steps)`` returns a scheduler, or ``None``
    for a constant rate. ``total_steps`` counts the optimizer steps after the warm-up
    (``train.warmup_*``, which ddpx runs before the schedule); ``train`` also holds
    ``steps_per_epoch``, the optimizer steps of one epoch. ``check(train)`` may raise
    :class:`~ddpx.contract.errors.UserError` before anything starts (keys that cannot work)."""

    name: str
    description: str
    build: Callable[[torch.optim.Optimizer, Mapping[str, Any], int], Any]
    check: Callable[[Mapping[str, Any]], None] | None = None


KINDS: Mapping[str, str] = {
    "tasks": "task",
    "models": "model",
    "metrics": "metric",
    "samplers": "sampler",
    "wrappers": "wrapper",
    "optimizers": "optimizer",
    "schedules": "schedule",
    "backends": "backend",
    "launchers": "launcher",
    "trackers": "tracker",
    "recipes": "recipe",
    "commands": "command",
}
"""Every kind of registered component (``register_<kind>`` hooks), with its singular name."""

__all__ = [
    "KINDS",
    "BackendSpec",
    "DataRequest",
    "DatasetRecord",
    "LaunchOption",
    "LaunchOutcome",
    "LauncherSpec",
    "MetricSpec",
    "ModelSpec",
    "OptimizerSpec",
    "Param",
    "RecipeSource",
    "SamplerSpec",
    "ScheduleSpec",
    "TablePredictor",
    "TaskData",
    "TaskSpec",
    "Tracker",
    "TrackerSpec",
    "WrapperSpec",
]
