"""The public plugin API of ddpx: everything a plugin imports, and the only module it imports.

A plugin is a module of ``@hookimpl`` functions (the hooks are specified, grouped by phase, in
:mod:`ddpx.contract.hookspecs`), published under the ``ddpx`` entry-point group. The built-in
plugins in ``ddpx.plugins`` are written against this module exactly as a third-party plugin is.
Names that are not here are private and may change in any release; the names here are kept.
Importing it is cheap: neither torch nor mlflow is imported.

**Marking hooks**

- :data:`hookimpl` — decorate each hook implementation (``@hookimpl``, or
  ``@hookimpl(trylast=True)`` for pluggy's ordering options).

**What a plugin registers** (one spec per ``register_<kind>`` hook)

- :class:`TaskSpec` (``register_tasks``): data, loss and judging metric; its ``build_data``
  receives a :class:`DataRequest` and returns :class:`TaskData`; its optional
  :class:`TablePredictor` lets a trained model answer a table (``ddpx predict``, MLflow models).
- :class:`ModelSpec` (with an :class:`EncoderSpec` when pretrained weights can start part of it,
  read as a :class:`PretrainedEncoder`), :class:`MetricSpec`, :class:`SamplerSpec`, :class:`WrapperSpec`,
  :class:`OptimizerSpec`, :class:`ScheduleSpec` — the parts of a run a recipe names.
- :class:`BackendSpec`, :class:`LauncherSpec` (with its :class:`LaunchOption` flags, returning a
  :class:`LaunchOutcome`), :class:`TrackerSpec` (creating a :class:`Tracker`),
  :class:`RecipeSource` — how a run starts, is recorded, and what it runs.
- A ``click.Command`` (``register_commands``): a command of the ``ddpx`` command line; and an
  answer to ``ddpx_load_predictor``: ``ddpx predict`` for a model that is not a run's folder.
- :class:`Param` declares a recipe key (``dataset.*``, ``model.*``): default, help, limits.
- Input forms: a task lists the forms its data can take (``TaskSpec.inputs``, say
  ``("smiles_tokens", "molecule_graph", "molecule_features")``), a model names the one it needs (``ModelSpec.inputs``),
  and ``build_data`` builds what :attr:`DataRequest.inputs` names.

**What a plugin receives**

- :class:`Job` (``job.config``: the resolved recipe; ``job.launch``: the resolved
  :class:`LaunchSettings`; ``job.run_dir``: its :class:`RunDir`), :class:`FitContext` in the
  lifecycle hooks, :class:`RunSummary` in ``ddpx_fit_end``, :class:`DatasetRecord` in
  ``Tracker.log_dataset``.

**Starting ranks** (launchers)

- :func:`run_rank` runs one rank in a process the launcher started; :data:`WORKER_MODULE` is the
  module to run as ``python -m WORKER_MODULE JOB_FILE`` instead. Either way the rank reads
  ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` (and
  ``LOCAL_WORLD_SIZE``) from its environment.
- :func:`run_supervised` runs a supervising command (torchrun, srun) that Ctrl-C or a SIGTERM
  to ``ddpx`` stops, ranks and all.
- :func:`threads_per_rank` sizes each started process's CPU threads and lets its idle threads
  sleep; :func:`cpu_share` is that share; :func:`idle_threads_sleep` only the second, for a
  launcher whose tool sizes the threads; :func:`local_gpu_count` counts GPUs without importing
  torch where there are none;
  :func:`signals_held` holds Ctrl-C and SIGTERM back while processes start, so every one of them
  has a pid to stop when the signal arrives.

**Data and checkpoints**

- :func:`data_root` is where datasets are read and downloaded (``$DDPX_DATA_DIR``, else
  ``~/.cache/ddpx/data``).
- :func:`load_checkpoint` reads a ddpx checkpoint safely (tensors and plain values only);
  :func:`model_state_from` takes the model weights out of it (or out of a plain state dict);
  :func:`load_model` rebuilds a run's exported best model (its ``model/`` folder);
  :func:`load_table_predictor` turns it into a function from an input table to an output table;
  :func:`weights_sha256` is the digest of a state dict a run's ``model.json`` records, by which
  weights made again are compared with the first.

**Commands** (``register_commands``)

- :func:`console` is where a command prints tables and paths: a ``rich`` console as wide as the
  terminal, or 200 columns when the output is piped.

**Errors**

- :class:`UserError`: a mistake the user can fix, shown as one paragraph naming the fix (raise it
  from a task's ``check`` or a launcher's ``check`` before anything starts);
  :class:`PluginError`: a broken plugin. :func:`did_you_mean` suggests the closest known name;
  :func:`listed` names a long list's first few and counts the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ddpx.contract.cpu_threads import OPENMP_WAITING, cpu_share, idle_threads_sleep, threads_per_rank
from ddpx.contract.data_dir import DATA_DIR_ENV, data_root
from ddpx.contract.encoders import EncoderSpec, PretrainedEncoder
from ddpx.contract.errors import PluginError, UserError, did_you_mean, listed
from ddpx.contract.held_signals import signals_held
from ddpx.contract.job import Job
from ddpx.contract.launch_settings import LaunchSettings
from ddpx.contract.markers import hookimpl
from ddpx.contract.records import DataRequest, DatasetRecord, FitContext, Param, RunSummary, TaskData
from ddpx.contract.run_dir import RunDir
from ddpx.contract.specs import (
    BackendSpec,
    LauncherSpec,
    LaunchOption,
    LaunchOutcome,
    MetricSpec,
    ModelSpec,
    OptimizerSpec,
    RecipeSource,
    SamplerSpec,
    ScheduleSpec,
    TablePredictor,
    TaskSpec,
    Tracker,
    TrackerSpec,
    WrapperSpec,
)
from ddpx.contract.terminal import console
from ddpx.launch.gpus import local_gpu_count
from ddpx.launch.supervise import run_supervised
from ddpx.rank.worker import WORKER_MODULE

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path


def run_rank(job_file: str) -> None:
    """Run this process's rank of the job in ``job_file`` (its environment says which rank); the
    process exits 1 on failure, 75 when stopped on request, 130 when interrupted."""
    from ddpx.rank.worker import run_rank as _run_rank

    _run_rank(job_file)


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a ddpx checkpoint (or a plain state dict) without unpickling objects; a missing,
    unreadable or unsafe file is a :class:`UserError` naming it. Imports torch."""
    from ddpx.records.checkpoint_file import load_checkpoint as _load_checkpoint

    return _load_checkpoint(path)


def model_state_from(state: dict[str, Any]) -> dict[str, Any]:
    """The model weights in a ddpx checkpoint, or in a plain (possibly DDP-saved) state dict,
    without wrapper prefixes (``module.``, ``_orig_mod.``)."""
    from ddpx.records.checkpoint_file import model_state_from as _model_state_from

    return _model_state_from(state)


def load_model(folder: str | Path) -> Any:
    """Rebuild the model a run exported (its ``model/`` folder: ``state_dict.pt`` and
    ``model.json``) with the installed plugins, weights loaded, in eval mode. Imports torch."""
    from ddpx.records.model_export import load_model as _load_model

    return _load_model(folder)


def load_table_predictor(folder: str | Path) -> Any:
    """``predict(table) -> table`` for the model a run exported (its ``model/`` folder), through
    its task's :class:`TablePredictor`; a task without one is a :class:`UserError`. Imports torch."""
    from ddpx.records.model_export import load_table_predictor as _load_table_predictor

    return _load_table_predictor(folder)


def weights_sha256(weights: Any) -> str:
    """The SHA-256 of a state dict's tensors (names, shapes, dtypes and values, in name order), as a
    run's ``model.json`` records it: equal for equal weights on any machine. Imports torch."""
    from ddpx.records.model_export import weights_sha256 as _weights_sha256

    return _weights_sha256(weights)


__all__ = [
    "DATA_DIR_ENV",
    "OPENMP_WAITING",
    "WORKER_MODULE",
    "BackendSpec",
    "DataRequest",
    "DatasetRecord",
    "EncoderSpec",
    "FitContext",
    "Job",
    "LaunchOption",
    "LaunchOutcome",
    "LaunchSettings",
    "LauncherSpec",
    "MetricSpec",
    "ModelSpec",
    "OptimizerSpec",
    "Param",
    "PluginError",
    "PretrainedEncoder",
    "RecipeSource",
    "RunDir",
    "RunSummary",
    "SamplerSpec",
    "ScheduleSpec",
    "TablePredictor",
    "TaskData",
    "TaskSpec",
    "Tracker",
    "TrackerSpec",
    "UserError",
    "WrapperSpec",
    "console",
    "cpu_share",
    "data_root",
    "did_you_mean",
    "hookimpl",
    "idle_threads_sleep",
    "listed",
    "load_checkpoint",
    "load_model",
    "load_table_predictor",
    "local_gpu_count",
    "model_state_from",
    "run_rank",
    "run_supervised",
    "signals_held",
    "threads_per_rank",
    "weights_sha256",
]
