"""``ddpx recipe`` (train one recipe) and ``ddpx sweep`` (train a grid of its variants)."""

from __future__ import annotations

import click

from ddpx.cli.app import cli, console, registry_with_warnings
from ddpx.cli.launch_options import LaunchCommand, settings_from
from ddpx.contract.errors import JobFailed

TRACKING_FAILED = 3  # exit status: trained to the end, but not (fully) recorded

RECIPE_EPILOG = """\b
Examples:
  ddpx recipe mlp_synthetic
  ddpx recipe mlp_synthetic --launcher torchrun --nproc 2
  ddpx recipe mlp_synthetic --nproc 3 train.lr=0.05 train.max_epochs=3
  ddpx recipe ./my_recipe.toml --tracking none
  ddpx recipe mlp_synthetic --resume auto     # continue the latest run
  ddpx recipe bbbp_rnn --launcher slurm --nnodes 2 --nproc 4 --partition gpu --wait

\b
KEY=VALUE overrides any recipe key; `ddpx show NAME` lists them all.
Runs land in MLflow (default store: ./mlflow.db; open with `mlflow ui`)
and in a run folder under ./ddpx-runs/.
"""



@cli.command("recipe", cls=LaunchCommand, epilog=RECIPE_EPILOG)
@click.argument("name")
@click.argument("overrides", nargs=-1, metavar="[KEY=VALUE]...")
def recipe_command(name, overrides, **values) -> None:
    """Train recipe NAME (a built-in name or a .toml path) with DDP.

    Every rank runs the same program; the held-out metric is computed exactly over the whole
    held-out split, and the run is logged to MLflow.
    """
    from ddpx.cli.summary_table import print_summary
    from ddpx.config.recipe import resolve_recipe
    from ddpx.launch.plan import plan_job
    from ddpx.launch.run import run_job

    registry = registry_with_warnings()
    recipe = resolve_recipe(registry, name, overrides)
    job = plan_job(registry, recipe, settings_from(registry, values))
    launch = job.launch
    click.echo(f"ddpx: {recipe.name} on {job.world_size} rank(s), launcher {launch.launcher}, backend {launch.backend}")
    summary = run_job(registry, recipe, job)
    if summary is not None:
        print_summary(recipe.name, summary, console())  # piped: one wide page, no path cut in two
        if summary.tracking_error:
            raise JobFailed(f"the run finished, but tracking failed during it ({summary.tracking_error}), so its "
                            f"record is incomplete. Every result is in {summary.run_dir}; once the store answers, "
                            f"record it with `ddpx upload {summary.run_dir}`.", TRACKING_FAILED)
        return
    launcher = registry.get("launchers", launch.launcher)
    if launcher.detaches is None or not launcher.detaches(job):
        click.echo(f"ddpx: this machine's {launch.nproc} rank(s) finished; global rank 0 ran on another "
                   "machine, which reports the results and logged the run.")


SWEEP_EPILOG = """\b
Examples:
  ddpx sweep mlp_synthetic train.lr=0.03,0.1,0.3
  ddpx sweep bbbp_rnn train.lr=0.001,0.003 model.d_model=64,128 --launcher torchrun
  ddpx sweep mlp_synthetic train.lr=0.05,0.1 train.max_epochs=3 --dry-run

\b
KEY=V1,V2 sweeps a key; KEY=VALUE sets it for every trial. The trials are the
grid of all swept values; each is a full distributed job, nested in MLflow
under one parent run that records the best trial (chosen on the dev metric)
and its held-out metric. A failed trial does not stop the sweep; the exit
code is 1 when any trial failed.
"""


@cli.command("sweep", cls=LaunchCommand, epilog=SWEEP_EPILOG)
@click.argument("name")
@click.argument("grid", nargs=-1, metavar="KEY=V1,V2... [KEY=VALUE]...")
@click.option("--dry-run", is_flag=True, help="List the trials and start nothing.")
def sweep_command(name, grid, dry_run, **values) -> None:
    """Train every combination of the swept values of recipe NAME, one job per trial."""
    from ddpx.cli.sweep_report import print_trial, print_trials
    from ddpx.launch.sweep import plan_sweep, run_sweep

    registry = registry_with_warnings()
    sweep = plan_sweep(registry, name, grid, settings_from(registry, values))
    if dry_run:
        print_trials(sweep, title=f"ddpx sweep {name}: {len(sweep.trials)} trial(s), nothing started")
        return
    first = sweep.trials[0].job
    click.echo(f"ddpx: sweep of {sweep.trials[0].recipe.name}, {len(sweep.trials)} trial(s) on {first.world_size} "
               f"rank(s) each, launcher {first.launch.launcher}, backend {first.launch.backend}")
    run_sweep(registry, sweep, report=print_trial,
              warn=lambda text: click.echo(f"Warning: {text}", err=True))
    print_trials(sweep, title=f"ddpx sweep {sweep.trials[0].recipe.name}")
    if sweep.failed:
        raise JobFailed(f"{len(sweep.failed)} of {len(sweep.trials)} trial(s) failed: "
                        + "; ".join(f"trial {t.number} ({t.label})" for t in sweep.failed)
                        + ". Each failed trial's run folder holds its error.", 1)
