"""Helpers for testing ddpx plugins: run a recipe through the real runner on CPU ranks.

    from ddpx.testing import run_recipe

    def test_my_task_trains():
        result = run_recipe("my_recipe", ["train.max_epochs=1"], plugins=["my_package.ddpx_plugin"])
        assert result.heldout["heldout_accuracy"] > 0.8

``plugins`` registers plugin modules without installing them: each is imported by name in the
test process and in every rank (through ``DDPX_PLUGINS``), so it must be importable there. With
pytest, the ``ddpx_run`` fixture (registered through the ``pytest11`` entry point) does the same
in a temporary folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ddpx.contract.errors import UserError
from ddpx.contract.records import RunSummary
from ddpx.plugin_host.plugin_manager import EXTRA_ENV


@dataclass(frozen=True)
class RunResult:
    """What a finished run left: rank 0's summary and its run folder."""

    summary: RunSummary
    run_dir: Path

    @property
    def heldout(self) -> dict[str, float]:
        return self.summary.heldout

    @property
    def checkpoint(self) -> Path:
        return self.run_dir / "checkpoints" / "best.pt"


@contextmanager
def plugins_enabled(modules: Sequence[str]) -> Iterator[None]:
    """Add plugin modules to ``DDPX_PLUGINS`` for the duration (ranks inherit it)."""
    previous = os.environ.get(EXTRA_ENV)
    if modules:
        os.environ[EXTRA_ENV] = ",".join(filter(None, [previous, *modules]))
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(EXTRA_ENV, None)
        else:
            os.environ[EXTRA_ENV] = previous


def run_recipe(
    recipe: str,
    overrides: Sequence[str] = (),
    *,
    plugins: Sequence[str] = (),
    nproc: int = 2,
    launcher: str = "spawn",
    tracking: str = "none",
    tracking_uri: str | None = None,
    workdir: str | os.PathLike | None = None,
) -> RunResult:
    """Run ``recipe`` (a name or a .toml path) on ``nproc`` CPU ranks with gloo; raise if it fails.
    The environment counts as for ``ddpx recipe``: ``DDPX_LOG_MODEL=false`` logs no MLflow model,
    ``DDPX_SYSTEM_METRICS=false`` records no system metrics."""
    from ddpx.config.recipe import resolve_recipe
    from ddpx.contract.launch_settings import LaunchSettings
    from ddpx.launch.plan import plan_job
    from ddpx.launch.run import run_job
    from ddpx.plugin_host.registry import load_registry

    base = Path(workdir) if workdir else Path.cwd()
    with plugins_enabled(plugins):
        registry = load_registry()
        resolved = resolve_recipe(registry, recipe, overrides)
        chosen = {"tracking_uri": tracking_uri} if tracking_uri else {}  # else MLFLOW_TRACKING_URI, as the CLI
        settings = LaunchSettings.from_environment(
            launcher=launcher,
            nproc=nproc,
            backend="gloo",
            tracking=tracking,
            runs_dir=str(base / "ddpx-runs"),
            **chosen,
        )
        job = plan_job(registry, resolved, settings)
        refuse_detached_launcher(registry, job)
        summary = run_job(registry, resolved, job)
    if summary is None:  # a launcher that returned before its ranks ran, without saying so beforehand
        raise UserError(
            f"launcher {launcher!r} returned before the job's ranks ran, so there are no results to "
            "return: test with launcher='spawn' or 'torchrun'."
        )
    return RunResult(summary=summary, run_dir=Path(summary.run_dir))


def refuse_detached_launcher(registry, job) -> None:
    """``run_recipe`` waits for the job and returns what it left; a launcher that hands the job to a
    batch system returns before any rank runs, so there would be nothing to return."""
    launcher = registry.get("launchers", job.launch.launcher)
    if launcher.hands_over(job):
        raise UserError(
            f"run_recipe runs the job here and returns its results, but launcher {job.launch.launcher!r} "
            "hands it to a batch system and returns at once: test with launcher='spawn' or 'torchrun' "
            "(the same ranks, started on this machine)."
        )


__all__ = ["RunResult", "plugins_enabled", "run_recipe"]
