"""The hook contract between the ddpx core and its plugins, grouped by the phase that calls it.

**Registration** (``register_*``, called wherever the registry is read: in the launching process
and on every rank). Every component ddpx uses — tasks (datasets), models, metrics, samplers,
wrappers, optimizers, learning-rate schedules, backends, launchers, trackers and recipes — reaches
the core through one of these hooks. A ``register_*`` hook receives one argument, ``register``:
call it once per component. The core calls each plugin's implementation separately, so it knows
which plugin registered which name, and two plugins registering the same name is an error naming
both. The built-in plugins in :mod:`ddpx.plugins` use exactly these hooks, loaded from the same
``ddpx`` entry-point group as third-party plugins.

**The command line** (the ``ddpx`` process): ``register_commands`` adds commands to ``ddpx``
(``ddpx runs`` comes from the MLflow tracker plugin, ``ddpx bench`` from the backends plugin) with
a ``register`` callback like the hooks above, names and clashes checked the same way; and
``ddpx_load_predictor`` lets a plugin answer ``ddpx predict`` for a model that is not a run's
``model/`` folder (an MLflow run id or model URI, say). The core imports no plugin: what a command
does comes from the plugin that owns it.

**Planning** (the launching process, before any rank starts): ``ddpx_resolve_backend``. It is a
``firstresult`` hook: pluggy calls the implementations newest-registered first and stops at the
first that returns something other than ``None``; the built-in answer is registered ``trylast``,
so a plugin's answer wins.

**The rank's run** (every rank, in step): ``ddpx_fit_start``, ``ddpx_epoch_end``,
``ddpx_fit_end`` and ``ddpx_preempted`` let a plugin observe a run. Each is called on every rank
at the same point, so an implementation may use collectives, but must then do so on every rank.

Writing a plugin — everything a plugin needs comes from :mod:`ddpx.api`::

    from ddpx.api import MetricSpec, hookimpl

    @hookimpl
    def register_metrics(register):
        register(MetricSpec(name="top1", description="...", compute=my_top1))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ddpx.contract.markers import hookspec

if TYPE_CHECKING:  # pragma: no cover - typing only
    import click

    from ddpx.contract.records import FitContext, RunSummary
    from ddpx.contract.specs import (
        BackendSpec,
        LauncherSpec,
        MetricSpec,
        ModelSpec,
        OptimizerSpec,
        RecipeSource,
        SamplerSpec,
        ScheduleSpec,
        TaskSpec,
        TrackerSpec,
        WrapperSpec,
    )


# --- Registration: the components of a run ---------------------------------------------------


@hookspec
def register_tasks(register: Callable[[TaskSpec], None]) -> None:
    """Register tasks: a dataset with its splits, its loss and its judging metric.

    Call ``register(TaskSpec(...))`` once per task. ``TaskSpec.build_data`` runs on every rank
    and must return identical splits everywhere (derive any randomness from the request's
    ``seed``). Its ``params`` become the recipe's ``dataset.*`` keys.
    """


@hookspec
def register_models(register: Callable[[ModelSpec], None]) -> None:
    """Register model families a recipe can name with ``model.name``.

    Call ``register(ModelSpec(...))`` once per model. ``ModelSpec.build(params, info)`` returns
    an un-wrapped ``torch.nn.Module``; the core moves it to the device and wraps it for DDP.
    Its ``params`` become the recipe's ``model.*`` keys.
    """


@hookspec
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    """Register metrics, computed once over a complete gathered split (never per shard).

    Call ``register(MetricSpec(...))`` once per metric. A task names its metric; the held-out
    value is logged as ``heldout_<name>`` and the dev value as ``dev_<name>``. A metric whose
    ``compute`` imports a library that is slow to import lists it in ``MetricSpec.imports``:
    rank 0 imports it as it starts, not after the first epoch while the other ranks wait.
    """


@hookspec
def register_samplers(register: Callable[[SamplerSpec], None]) -> None:
    """Register training samplers a recipe can name with ``train.sampler``.

    A sampler gives each rank its part of the training split and reshuffles on
    ``set_epoch``. Evaluation never uses it: held-out and dev splits are always sharded
    exactly by the core, without padding.
    """


@hookspec
def register_wrappers(register: Callable[[WrapperSpec], None]) -> None:
    """Register model wrappers a recipe can name with ``train.wrapper``.

    Call ``register(WrapperSpec(...))`` once per wrapper. ``WrapperSpec.wrap(model, device)``
    turns the plain model into the data-parallel module the training step calls; it must start
    every rank from rank 0's weights and keep the ranks' parameters equal after each optimizer
    step. Built in: ``ddp`` (the default), ``allreduce`` and ``dp``.
    """


@hookspec
def register_optimizers(register: Callable[[OptimizerSpec], None]) -> None:
    """Register optimizers a recipe can name with ``train.optimizer``.

    ``OptimizerSpec.build(parameters, train)`` returns a ``torch.optim.Optimizer`` for the
    wrapped model's parameters; ``train`` holds the resolved ``train.*`` keys (``lr``,
    ``weight_decay``, ``momentum``, ...). Built in: ``sgd``, ``adam``, ``adamw``.
    """


@hookspec
def register_schedules(register: Callable[[ScheduleSpec], None]) -> None:
    """Register learning-rate schedules a recipe can name with ``train.lr_schedule``.

    ``ScheduleSpec.build(optimizer, train, total_steps)`` returns a torch LR scheduler stepped
    after every optimizer step (``total_steps`` of them in the whole run), or ``None`` for a
    constant rate. Its ``state_dict`` is saved with every checkpoint. Built in: ``none``,
    ``cosine``, ``onecycle``.
    """


# --- Registration: how a run is started and recorded ------------------------------------------


@hookspec
def register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register ``torch.distributed`` backends (``nccl``, ``gloo``, ...) for ``--backend``.

    ``BackendSpec.unusable_reason`` is checked before any process starts, so asking for a
    backend this machine cannot run is a clear error rather than a hang.
    """


@hookspec
def register_launchers(register: Callable[[LauncherSpec], None]) -> None:
    """Register launchers for ``--launcher``: ways to start every rank of a job.

    A launcher starts the worker once per rank — :func:`ddpx.api.run_rank` in a process it
    started, or ``python -m`` :data:`ddpx.api.WORKER_MODULE` ``JOB_FILE`` — with ``MASTER_ADDR``,
    ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` set, waits for them, and returns a
    ``LaunchOutcome``. ``LauncherSpec.options`` adds its own command-line options.
    """


@hookspec
def register_trackers(register: Callable[[TrackerSpec], None]) -> None:
    """Register experiment trackers for ``--tracking``.

    A tracker is created on rank 0 only and receives the run's parameters, per-epoch metrics,
    held-out metrics and artifacts.
    """


@hookspec
def register_recipes(register: Callable[[RecipeSource], None]) -> None:
    """Register recipe files (TOML) shipped by a plugin, listed by ``ddpx recipes``.

    Call ``register(RecipeSource(path))`` once per file.
    """


# --- The command line: the ``ddpx`` process ------------------------------------------------------


@hookspec
def register_commands(register: Callable[[click.Command], None]) -> None:
    """Register commands of the ``ddpx`` command line (``ddpx runs``, ``ddpx bench``, ...).

    Call ``register(command)`` once per top-level ``click.Command`` or ``click.Group``; its
    ``name`` is the command's. ``ddpx --help`` and the docs' command reference list every plugin's
    commands beside the built-in ones, and a plugin's command runs with the same error handling
    (a :class:`~ddpx.contract.errors.UserError` is one ``Error:`` paragraph and exit code 2).
    Plugins are loaded when a command of theirs is asked for or the commands are listed, never
    for a built-in command: build the ``click`` objects cheaply and import heavy libraries (torch,
    mlflow) inside the command's function. A command named like one of the core's is left out
    with a warning; two plugins registering one name is an error naming both, shown as a warning,
    and the plugins' commands are left out.
    """


@hookspec(firstresult=True)
def ddpx_load_predictor(model: str, tracking_uri: str | None) -> Callable[[Any], Any] | None:
    """Load ``MODEL`` of ``ddpx predict`` when it is not a run's ``model/`` folder; the first
    non-``None`` answer wins (``firstresult``).

    Return ``predict(table) -> table`` (pandas data frames: the input rows, then the model's
    answers) for a model reference this plugin understands, or ``None`` to leave it to others.
    ``tracking_uri`` is ``--tracking-uri`` (or ``MLFLOW_TRACKING_URI``), ``None`` when not given.
    Raise :class:`~ddpx.contract.errors.UserError` for a reference that is yours but cannot be
    loaded. Built in: the ``mlflow`` tracker plugin loads an MLflow run id, ``runs:/`` and
    ``models:/`` URIs.
    """


# --- Planning: the launching process, before any rank starts ------------------------------------


@hookspec(firstresult=True)
def ddpx_resolve_backend(nproc_per_node: int, gpus: int) -> str | None:
    """Choose the backend for ``--backend auto``; the first non-``None`` answer wins
    (``firstresult``).

    ``gpus`` is the number of GPUs this machine has. The built-in answer is ``nccl`` when every
    local rank gets its own GPU, else ``gloo``.
    """


# --- The rank's run: called on every rank, at the same point ------------------------------------


@hookspec
def ddpx_fit_start(context: FitContext) -> None:
    """Called on every rank once the model is wrapped for DDP, before the first epoch (an ensemble's,
    ``train.ensemble_size`` above 1: before each member's first epoch, with that member's model)."""


@hookspec
def ddpx_epoch_end(context: FitContext, epoch: int, metrics: Mapping[str, float]) -> None:
    """Called on every rank after each epoch's dev evaluation with that epoch's metrics (an ensemble
    member's epochs are numbered from 1 for each member)."""


@hookspec
def ddpx_fit_end(context: FitContext, result: RunSummary) -> None:
    """Called on every rank after the held-out evaluation of the best model (an ensemble's: once,
    after its members' mean was evaluated, with the members as one model)."""


@hookspec
def ddpx_preempted(context: FitContext) -> None:
    """Called on every rank after a stop request (SIGUSR1) was checkpointed, before the ranks exit.

    The run continues from that checkpoint when it is started again; a launcher that can start it
    again (Slurm's ``scontrol requeue``, say) does so here, on rank 0.
    """


def hook_names() -> list[str]:
    """The names of every hook in the contract, in the order they are defined here."""
    return [name for name, value in globals().items() if callable(value) and hasattr(value, "ddpx_spec")]


__all__: list[Any] = [
    "ddpx_epoch_end",
    "ddpx_fit_end",
    "ddpx_fit_start",
    "ddpx_load_predictor",
    "ddpx_preempted",
    "ddpx_resolve_backend",
    "register_backends",
    "register_commands",
    "register_launchers",
    "register_metrics",
    "register_models",
    "register_optimizers",
    "register_recipes",
    "register_samplers",
    "register_schedules",
    "register_tasks",
    "register_trackers",
    "register_wrappers",
]
