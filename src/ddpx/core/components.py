"""The named components plugins register, and the small records passed between them.

Everything here is plain data: importing this module imports neither torch nor mlflow, so
plugins can describe their components cheaply and build the heavy parts only when a run asks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

if TYPE_CHECKING:  # pragma: no cover - typing only
    import numpy as np
    import torch
    from torch.utils.data import Dataset, Sampler

    from ddpx.core.job import Job


@dataclass(frozen=True)
class Param:
    """One configurable recipe key: its default (which fixes its type) and its limits.

    ``minimum`` is inclusive and ``above`` exclusive; ``choices`` lists the allowed values.
    """

    default: Any
    help: str = ""
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    above: float | None = None


@dataclass(frozen=True)
class DataRequest:
    """What a task's ``build_data`` receives on every rank.

    ``params`` holds the resolved ``dataset.*`` keys. ``seed`` is ``train.seed``: splits drawn
    from it are identical on every rank. ``barrier`` waits for every rank; with
    ``is_local_main`` it lets one process per machine download while the others wait.
    ``log`` tells the user something once (it prints on rank 0 only). ``device`` is where this
    rank trains, for data kept on the device.
    """

    params: Mapping[str, Any]
    seed: int
    rank: int
    world_size: int
    local_rank: int
    barrier: Callable[[], None]
    log: Callable[[str], None] = print
    device: "torch.device | None" = None

    @property
    def is_local_main(self) -> bool:
        return self.local_rank == 0


@dataclass
class TaskData:
    """The three splits a task provides, each a map-style dataset of ``(input, target)`` pairs.

    ``info`` carries what the model needs to know about the data (input width, number of
    classes, a vocabulary, ...); it is passed to the model builder and saved beside the best
    model, so it must be JSON-serialisable. ``collate_fn`` is used for every split when given.
    ``source`` says where the data came from (a file, folder or URL) for the tracker's dataset
    record; when it is a file, its content digest identifies the dataset.
    """

    train: "Dataset"
    dev: "Dataset"
    heldout: "Dataset"
    info: dict[str, Any] = field(default_factory=dict)
    collate_fn: Callable[[list[Any]], Any] | None = None
    source: str = ""


@dataclass(frozen=True)
class DatasetRecord:
    """The data a run trained on, as trackers record it: name, source, digest, split sizes."""

    name: str
    source: str
    digest: str
    splits: Mapping[str, int]


@dataclass(frozen=True)
class TaskSpec:
    """A learning problem: how to build its data, its loss and the metric that judges it.

    ``loss`` is ``"cross_entropy"`` (integer class targets, logits of shape ``(N, C)``) or
    ``"bce_with_logits"`` (0/1 targets, logits of shape ``(N,)``). ``metric`` names a
    registered metric, used for model selection on the dev split and reported on held-out.
    ``params`` declares the task's ``dataset.*`` keys. ``check(params)`` — or
    ``check(params, world_size)`` when it needs the number of ranks — runs in the launching
    process before any rank starts and raises :class:`~ddpx.core.errors.UserError` for settings
    that cannot work (a missing or unreadable file, a missing optional dependency, fewer
    training samples than ranks).
    """

    name: str
    description: str
    build_data: Callable[[DataRequest], TaskData]
    loss: str
    metric: str
    params: Mapping[str, Param] = field(default_factory=dict)
    check: Callable[[Mapping[str, Any]], None] | None = None


@dataclass(frozen=True)
class ModelSpec:
    """A model family: ``build(params, info)`` returns a ``torch.nn.Module``.

    ``params`` are the resolved ``model.*`` keys; ``info`` is :attr:`TaskData.info`.
    """

    name: str
    description: str
    build: Callable[[Mapping[str, Any], Mapping[str, Any]], "torch.nn.Module"]
    params: Mapping[str, Param] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricSpec:
    """A held-out metric computed once over the complete, gathered split.

    ``compute(targets, outputs)`` receives numpy arrays: the targets and the model's raw
    outputs (logits), in dataset order. ``greater_is_better`` drives model selection.
    ``imports`` names modules ``compute`` imports (say ``"sklearn.metrics"``): the rank that
    computes the metric imports them while it starts, so that the first dev evaluation does not
    stop that rank for the import while the others wait, between the first and second epochs.
    """

    name: str
    description: str
    compute: Callable[["np.ndarray", "np.ndarray"], float]
    greater_is_better: bool = True
    imports: tuple[str, ...] = ()


@dataclass(frozen=True)
class SamplerSpec:
    """A training sampler: ``build(dataset, rank=, world_size=, seed=)`` returns a sampler
    with ``set_epoch(epoch)`` that gives each rank its share of the training split."""

    name: str
    description: str
    build: Callable[..., "Sampler"]


@dataclass(frozen=True)
class WrapperSpec:
    """How the model is made data-parallel (``train.wrapper``).

    ``wrap(model, device)`` receives the plain model, already on ``device``, after the process
    group is up, and returns the module the training step calls. It must make every rank start
    from the same weights and keep them equal (``train.check_sync=true`` verifies that). Keep the
    plain model as the wrapper's ``module`` attribute, so checkpoints hold its bare state dict.
    ``check(job)`` may raise :class:`~ddpx.core.errors.UserError` before anything starts.
    """

    name: str
    description: str
    wrap: Callable[["torch.nn.Module", "torch.device"], "torch.nn.Module"]
    check: Callable[["Job"], None] | None = None


@dataclass(frozen=True)
class BackendSpec:
    """A ``torch.distributed`` backend and the device each rank computes on.

    ``unusable_reason(nproc_per_node)`` returns ``None`` when the backend can run that many
    local ranks here, else one sentence saying why not (checked before any process starts).
    """

    name: str
    description: str
    device_type: str
    unusable_reason: Callable[[int], str | None]


class Launcher(Protocol):
    """Starts the ranks of a job and returns the job's exit status (0 for success)."""

    def __call__(self, job: "Job") -> int: ...


@dataclass(frozen=True)
class LauncherSpec:
    """A way to start the ranks: ``launch(job)`` runs them all and returns an exit status.

    ``check(job)`` may raise :class:`ddpx.core.errors.UserError` before anything starts.
    ``submits()`` is true when the ranks will run on other machines (a batch system): then this
    machine's GPUs are not checked against the backend. A launcher that hands the job over and
    returns before it ends sets ``job.launcher_options["detached"] = True``.
    """

    name: str
    description: str
    launch: Launcher
    check: Callable[["Job"], None] | None = None
    submits: Callable[[], bool] | None = None


class Tracker(Protocol):
    """An experiment tracker, used on rank 0 only."""

    run_id: str | None

    def start(self, *, run_name: str, params: Mapping[str, Any], tags: Mapping[str, str],
              resume_run_id: str | None = None) -> None:
        """Open a run; with ``resume_run_id``, continue that run (its parameters are already logged)."""
        ...

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None: ...

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        """Store a file with the run, under ``folder`` when given."""
        ...

    def log_dataset(self, dataset: DatasetRecord) -> None:
        """Record the run's input data (optional: trackers without it skip this)."""
        ...

    def finish(self, status: str, error: str | None = None) -> None: ...

    def describe(self) -> str:
        """One line telling the user where to look at the run."""
        ...


@dataclass(frozen=True)
class TrackerSpec:
    """A tracker: ``create(job)`` returns a :class:`Tracker` (called on rank 0 only)."""

    name: str
    description: str
    create: Callable[["Job"], Tracker]


@dataclass(frozen=True)
class RecipeSource:
    """A recipe file a plugin ships. Its name is the file's ``name`` key (or its stem)."""

    path: Path


@dataclass(frozen=True)
class FitContext:
    """What lifecycle hooks are told about the rank they run on."""

    job: "Job"
    rank: int
    world_size: int
    local_rank: int
    device: "torch.device"
    model: "torch.nn.Module"
    run_dir: Path


@dataclass
class FitResult:
    """The outcome of one run, as rank 0 reports it."""

    heldout: dict[str, float]
    best_epoch: int
    epochs_run: int
    wall_seconds: float
    heldout_samples: int
    run_id: str | None = None
    tracker_hint: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


REGISTRY_KINDS: Sequence[str] = (
    "tasks",
    "models",
    "metrics",
    "samplers",
    "wrappers",
    "backends",
    "launchers",
    "trackers",
    "recipes",
)
