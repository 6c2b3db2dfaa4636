"""The records passed between the core and plugins: recipe keys, data requests and splits, the
dataset record, what lifecycle hooks see, and the summary a finished run leaves.

Plain data: importing this module imports neither torch nor mlflow.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch
    from torch.utils.data import Dataset

    from ddpx.contract.job import Job


@dataclass(frozen=True)
class Param:
    """One configurable recipe key: its default (which fixes its type) and its limits.

    ``minimum`` and ``maximum`` are inclusive, ``above`` and ``below`` exclusive (a fraction:
    ``above=0, below=1``); ``choices`` lists the allowed values; ``registry`` names the kind of
    registered component the value must name (``"optimizers"``); ``schemes`` are the URL schemes
    a text value may use (``("http", "https")``; empty text is always allowed).

    Every key also gets the general rules whatever it declares: a number is finite, an integer
    fits in 64 bits, text holds no control characters and is at most 4096 characters long.
    """

    default: Any
    help: str = ""
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    above: float | None = None
    registry: str | None = None
    maximum: float | None = None
    below: float | None = None
    schemes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class DataRequest:
    """What a task's ``build_data`` receives on every rank.

    ``params`` holds the resolved ``dataset.*`` keys. ``seed`` is ``train.seed``: splits drawn
    from it are identical on every rank. ``barrier`` waits for every rank; with
    ``is_local_main`` it lets one process per machine download while the others wait.
    ``log`` tells the user something once (it prints on rank 0 only). ``device`` is where this
    rank trains, for data kept on the device. ``inputs`` is the form of input the run's model
    needs, one of :attr:`TaskSpec.inputs` (empty when the task names none).
    """

    params: Mapping[str, Any]
    seed: int
    rank: int
    world_size: int
    local_rank: int
    barrier: Callable[[], None]
    log: Callable[[str], None] = print
    device: torch.device | None = None
    inputs: str = ""

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

    train: Dataset
    dev: Dataset
    heldout: Dataset
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
class FitContext:
    """What lifecycle hooks are told about the rank they run on."""

    job: Job
    rank: int
    world_size: int
    local_rank: int
    device: torch.device
    model: torch.nn.Module
    run_dir: Path


@dataclass
class RunSummary:
    """The outcome of one run: what rank 0 writes to ``summary.json`` and the launching process
    reads back (the same on every rank when ``ddpx_fit_end`` sees it).

    ``heldout`` maps ``heldout_<metric>`` and ``heldout_loss`` to their values; ``best_dev`` is the
    dev metric of the selected epoch (sweeps choose on it, never on held-out), chosen by that metric
    or, with ``train.select_by=loss``, by the lowest dev loss (``selected_by``, ``best_dev_loss``). A task with
    several labels also has ``by_label``: ``heldout_<metric>/<label>`` for each label it scored.

    An ensemble (``train.ensemble_size`` above 1) has ``members``, one record each: its ``seed``,
    ``best_epoch``, ``epochs_run``, ``best_dev`` and ``best_dev_loss`` (its own selection), and its
    ``heldout`` and ``by_label`` metrics; the fields above are then the ensemble's — its held-out
    and dev results (``best_dev``: its members' mean on dev), the epochs of all members
    (``epochs_run``), and ``best_epoch`` 0 (each member has its own).
    """

    heldout: dict[str, float]
    metric: str
    greater_is_better: bool
    best_dev: float | None
    best_epoch: int
    epochs_run: int
    wall_seconds: float
    heldout_samples: int
    run_id: str | None = None
    tracker_hint: str | None = None
    run_dir: str = ""
    tracking_error: str | None = None  # the tracker failed during the run: the record is incomplete
    by_label: dict[str, float] = field(default_factory=dict)  # several labels: heldout_<metric>/<label>
    pruned_after: int | None = None  # a search's trial its pruner stopped: the last epoch trained
    selected_by: str = "metric"  # train.select_by: the epoch of the best dev metric, or of the lowest dev loss
    best_dev_loss: float | None = None  # the selected epoch's dev loss
    members: list[dict[str, Any]] = field(default_factory=list)  # an ensemble's members (see below)

    @property
    def heldout_metric(self) -> tuple[str, float]:
        """``("heldout_<metric>", value)``."""
        name = f"heldout_{self.metric}"
        return name, self.heldout[name]

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> RunSummary:
        values = json.loads(path.read_text(encoding="utf-8"))
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})
