"""Training one model on this rank: build its training state, continue from the checkpoint when
the run continues, and run the epochs — the run's model, or each member of an ensemble in turn
(:mod:`ddpx.rank.loop.ensemble`). It ends with the best dev epoch's weights in
``run.state.selection.best_state``.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from ddpx.contract.records import TaskData
from ddpx.rank.diagnostics.stall import BEACON
from ddpx.rank.loop.epochs import run_epochs
from ddpx.rank.loop.optim import build_schedule
from ddpx.rank.loop.training_state import TrainingState, build_training_state, restore
from ddpx.rank.loop.world_change import continue_here

if TYPE_CHECKING:  # pragma: no cover
    from ddpx.rank.run_context import RunContext


def train_model(run: RunContext, data: TaskData) -> None:
    """Build (and restore), tell the plugins, train: the epoch loop of :mod:`ddpx.rank.loop.epochs`."""
    BEACON.at("building the model, its wrapper and the optimizer")
    state = build_training_state(run, data)
    if run.resume is not None:
        for line in resume_training(run, data, state):
            run.console.print(line)
    run.start_training(data, state)
    BEACON.at("the plugins' ddpx_fit_start hooks")
    run.registry.pm.hook.ddpx_fit_start(context=run.context)
    try:
        run_epochs(run)
    except BaseException:
        run.profiler.abandon()
        raise
    run.profiler.close()


def resume_training(run: RunContext, data: TaskData, state: TrainingState) -> list[str]:
    """Restore the checkpoint's state, fitted to this job's ranks and steps; lines for the user."""
    train, resume, env = run.train, run.resume, run.env
    lines = [restore(state, resume, env)]
    changed = continue_here(
        state,
        resume,
        env.rank,
        env.world_size,
        partial(run.parts.sampler.build, data.train, seed=train["seed"]),
        train,
        partial(build_schedule, run.parts.schedule, state.optimizer, train, state.optimizer_steps_per_epoch),
    )
    return lines + ([changed] if changed else [])
