"""Two training processes on one machine taking turns epoch by epoch (``run.py --lockstep``).

Two runs of a benchmark pair measured one after the other see the machine in different states: on
a shared virtual machine the speed drifts by tens of percent within minutes. Started together and
taking turns, each run trains one epoch while the other is blocked, so each of its epochs lies
between two of the other's and drift falls on both alike; neither ever shares the cores with the
other's training.

The turn passes through two named pipes (FIFOs), one per process: a process waits for its turn with
a blocking read of its own pipe (no CPU while it waits) and gives the turn away by writing one byte
to the other's. Before the first epoch the second process says it is ready (``R``) and waits; the
first starts only then, so neither's first epoch shares the machine with the other's imports and
featurization. ``D`` says the writer has finished: from then on the reader never waits.

- In a ddpx rank, the plugin hooks below (loaded through ``DDPX_PLUGINS=benchmarks.vs_chemprop.lockstep``
  with the repository root on ``PYTHONPATH``): start before the first epoch, give the turn after each epoch's dev
  evaluation (``ddpx_epoch_end``; the next epoch's clock starts after it), finish at the end.
- In Chemprop's Lightning loop, ``clocked_chemprop.py``'s epoch clock calls the same :class:`Turns`.

``LOCKSTEP_ENV`` holds ``<own pipe>:<other's pipe>:first|second``; without it the hooks do nothing.
Only a run of one process takes turns (a rank of a larger world would block its peers' collectives).
"""

from __future__ import annotations

import os
import select

from ddpx.api import hookimpl

LOCKSTEP_ENV = "DDPX_BENCH_LOCKSTEP"
TURN, READY, DONE = b"T", b"R", b"D"
WAIT_LIMIT_S = 1800.0  # the other process's longest epoch, with its dev evaluation, is far shorter


class Turns:
    """This process's side of the turn-taking: :meth:`start`, :meth:`give`, :meth:`finish`."""

    def __init__(self, own: str, other: str, first: bool):
        self._own = os.open(own, os.O_RDWR)  # read-write: opening never blocks on a FIFO
        self._other = os.open(other, os.O_RDWR)
        self.first = first
        self.other_done = False

    def start(self) -> None:
        """Before the first epoch: the first process waits until the second is ready; the second
        says so and waits for its turn."""
        if not self.first:
            os.write(self._other, READY)
        self.wait()

    def wait(self) -> None:
        """Block until the other process gives the turn (or is ready) or says it has finished."""
        if self.other_done:
            return
        ready, _, _ = select.select([self._own], [], [], WAIT_LIMIT_S)
        if not ready:
            raise RuntimeError(f"lockstep: the other process gave no turn in {WAIT_LIMIT_S:.0f} s")
        self.other_done = os.read(self._own, 1) == DONE

    def give(self) -> None:
        """The other process's turn; this one then waits (unless the other has finished)."""
        os.write(self._other, TURN)
        self.wait()

    def finish(self) -> None:
        """This process trains no more: the other never waits for it again."""
        os.write(self._other, DONE)


def make_pipes(folder: str, names: list[str]) -> dict[str, str]:
    """One FIFO per name in ``folder``."""
    pipes = {}
    for name in names:
        pipes[name] = os.path.join(folder, f"turn-{name}")
        os.mkfifo(pipes[name])
    return pipes


def turns_from_env() -> Turns | None:
    """This process's :class:`Turns` when ``LOCKSTEP_ENV`` names its pipes, else None."""
    value = os.environ.get(LOCKSTEP_ENV)
    if not value:
        return None
    own, other, role = value.split(":")
    return Turns(own, other, first=role == "first")


_TURNS: list[Turns | None] = []


def _turns(context) -> Turns | None:
    if not _TURNS:
        turns = turns_from_env()
        if turns and context.world_size != 1:
            raise RuntimeError("lockstep: only a run of one rank can take turns")
        _TURNS.append(turns)
    return _TURNS[0]


@hookimpl
def ddpx_fit_start(context) -> None:
    turns = _turns(context)
    if turns:
        turns.start()


@hookimpl
def ddpx_epoch_end(context, epoch, metrics) -> None:
    turns = _turns(context)
    if turns:
        turns.give()


@hookimpl
def ddpx_fit_end(context, result) -> None:
    turns = _turns(context)
    if turns:
        turns.finish()
