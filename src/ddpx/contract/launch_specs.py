"""What a launcher and a backend register (``register_launchers``, ``register_backends``): how
ranks are started, with which command-line options, and on which devices they compute.

Plain data, like :mod:`ddpx.contract.specs` (which re-exports every name here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ddpx.contract.job import Job


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


@dataclass(frozen=True)
class LaunchOption:
    """A command-line option a launcher adds to ``ddpx recipe`` and ``ddpx sweep``.

    ``name`` is the flag without its dashes (``partition`` gives ``--partition``); the value
    reaches the launcher as ``job.launch.launcher_options[key]``, where ``key`` is the name with
    ``_`` for ``-``. ``kind`` is ``str``, ``int`` or ``float``; ``flag=True`` makes a switch and
    ``multiple=True`` a repeatable option (its value a list). Giving a launcher's option with
    another launcher is a usage error.
    """

    name: str
    help: str
    kind: type = str
    default: Any = None
    flag: bool = False
    multiple: bool = False
    metavar: str | None = None

    @property
    def key(self) -> str:
        return self.name.replace("-", "_")


@dataclass(frozen=True)
class LaunchOutcome:
    """What a launcher reports: the job's exit status (0 for success), ``detached=True`` when it
    handed the job over (to a batch system, say) and returned before it ended, and the ranks
    that a signal killed (``((1, "SIGKILL"),)``): such a rank records no error of its own, and
    its peers' errors are only the consequence."""

    status: int
    detached: bool = False
    killed: tuple[tuple[int, str], ...] = ()


class Launcher(Protocol):
    """Starts the ranks of a job and returns its :class:`LaunchOutcome`."""

    def __call__(self, job: Job) -> LaunchOutcome: ...


@dataclass(frozen=True)
class LauncherSpec:
    """A way to start the ranks: ``launch(job)`` runs them all and returns a :class:`LaunchOutcome`.

    ``check(job)`` may raise :class:`~ddpx.contract.errors.UserError` before anything starts.
    ``submits()`` is true when the ranks will run on other machines (a batch system): then this
    machine's GPUs are not checked against the backend. ``detaches(job)`` is true when ``launch``
    will hand the job over and return before it ends (a sweep then refuses it: each trial's
    result is needed before the next). ``options`` are the launcher's own command-line options
    (:class:`LaunchOption`). ``elastic=True`` says the launcher runs a job whose number of
    machines may change while it runs (``--nnodes MIN:MAX``; ``job.launch.min_nodes``), restarting
    the ranks, which continue from the run folder's last checkpoint on the new world size.
    """

    name: str
    description: str
    launch: Launcher
    check: Callable[[Job], None] | None = None
    submits: Callable[[], bool] | None = None
    detaches: Callable[[Job], bool] | None = None
    options: tuple[LaunchOption, ...] = ()
    elastic: bool = False

    def hands_over(self, job: Job) -> bool:
        """Will ``launch`` hand ``job`` over and return before it ends (``detaches``)?"""
        return self.detaches is not None and self.detaches(job)
