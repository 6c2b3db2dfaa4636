"""``ddpx recipe`` (train one recipe) and ``ddpx sweep`` (train a grid of its variants, or an
Optuna search)."""

from __future__ import annotations

from pathlib import Path

import click

from ddpx.cli.app import cli, console, registry_with_warnings
from ddpx.cli.launch_options import LaunchCommand, settings_from
from ddpx.cli.stop_messages import heard_from_the_first_line, sweep_stop_hint
from ddpx.contract.errors import JobFailed

TRACKING_FAILED = 3  # exit status: trained to the end, but not (fully) recorded

RECIPE_EPILOG = """\b
Examples:
  ddpx recipe mlp_synthetic
  ddpx recipe mlp_synthetic --launcher torchrun --nproc 2
  ddpx recipe mlp_synthetic --nproc 3 train.lr=0.05 train.max_epochs=3
  ddpx recipe ./my_recipe.toml --tracking none
  ddpx recipe mlp_synthetic --resume auto     # continue the latest run
  ddpx recipe bbbp_rnn --launcher slurm --nnodes 2 --nproc 4 \\
      --partition gpu --wait

\b
KEY=VALUE overrides any recipe key; `ddpx show NAME` lists them all.
Runs land in MLflow (default store: ./mlflow.db; open with `mlflow ui`)
and in a run folder under ./ddpx-runs/.
"""


@cli.command("recipe", cls=LaunchCommand, epilog=RECIPE_EPILOG)
@click.argument("name")
@click.argument("overrides", nargs=-1, metavar="[KEY=VALUE]...")
@heard_from_the_first_line
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
            raise JobFailed(
                f"the run finished, but tracking failed during it ({summary.tracking_error}), so its "
                f"record is incomplete. Every result is in {summary.run_dir}; once the store answers, "
                f"record it with `ddpx upload {summary.run_dir}`.",
                TRACKING_FAILED,
            )
        return
    launcher = registry.get("launchers", launch.launcher)
    if not launcher.hands_over(job):
        click.echo(
            f"ddpx: this machine's {launch.nproc} rank(s) finished; global rank 0 ran on another "
            "machine, which reports the results and logged the run."
        )


SWEEP_EPILOG = """\b
Examples:
  ddpx sweep mlp_synthetic train.lr=0.03,0.1,0.3
  ddpx sweep bbbp_rnn train.lr=0.001,0.003 model.d_model=64,128 \\
      --launcher torchrun
  ddpx sweep mlp_synthetic train.lr=0.05,0.1 train.max_epochs=3 --dry-run
  ddpx sweep mlp_synthetic 'train.lr=loguniform(0.01,0.3)' \\
      'model.n_layers=int(2,5)' --search optuna --trials 8
  ddpx sweep mlp_synthetic train.lr=0.03,0.1,0.3,1.0 --parallel 2 --nproc 1

\b
KEY=V1,V2 sweeps a key; KEY=VALUE sets it for every trial. The trials are the
grid of all swept values; each is a full distributed job, nested in MLflow
under one parent run that records the best trial (chosen on the dev metric)
and its held-out metric. A failed trial does not stop the sweep; the exit
code is 1 when any trial failed.

\b
With --search optuna, Optuna picks each trial's values from a search space:
KEY=uniform(LOW,HIGH), loguniform(LOW,HIGH), int(LOW,HIGH), logint(LOW,HIGH)
or choice(A,B,...) (KEY=A,B is a choice). After every epoch rank 0 reports the
dev metric and the pruner (median: behind the earlier trials' median at that
epoch, once the trial has run --pruner-warmup epochs) stops a poor trial on
every rank at once; it is kept as PRUNED. The study is stored in sqlite
(ddpx-runs/optuna.db) for Optuna's own tools.

\b
--parallel P runs P trials at once, each in its own process pinned to its
share of the CPU cores (and of the GPUs), its output in its run folder's
trial.log; with --launcher slurm, P jobs at once.
"""


@cli.command("sweep", cls=LaunchCommand, epilog=SWEEP_EPILOG)
@click.argument("name")
@click.argument("grid", nargs=-1, metavar="KEY=V1,V2|KEY=SPACE... [KEY=VALUE]...")
@click.option("--dry-run", is_flag=True, help="List the trials (or check the search) and start nothing.")
@click.option(
    "--search",
    "search",
    type=click.Choice(["grid", "optuna"]),
    default="grid",
    show_default=True,
    help="grid: every combination of the swept values; optuna: Optuna chooses from a search space.",
)
@click.option("--trials", type=int, default=None, help="With --search optuna: how many trials to run.")
@click.option("--sampler", default="tpe", show_default=True, help="With --search optuna: tpe, random or grid.")
@click.option("--pruner", default="median", show_default=True, help="With --search optuna: median, hyperband or none.")
@click.option(
    "--pruner-warmup",
    type=int,
    default=None,
    metavar="EPOCHS",
    help="With --search optuna: epochs every trial runs before the pruner may stop it.  [default: a fifth "
    "of train.max_epochs]",
)
@click.option(
    "--search-timeout",
    type=float,
    default=None,
    metavar="SECONDS",
    help="With --search optuna: start no trial after this many seconds.",
)
@click.option("--search-seed", type=int, default=None, help="With --search optuna: the sampler's seed.")
@click.option(
    "--study-storage",
    default=None,
    metavar="URL",
    help="With --search optuna: the Optuna storage (default sqlite:///ddpx-runs/optuna.db).",
)
@click.option(
    "--parallel",
    type=int,
    default=1,
    show_default=True,
    metavar="P",
    help="Run P trials at once, each on its own share of this machine's CPU cores (and GPUs), or with "
    "--launcher slurm as P jobs at once.",
)
@click.option(
    "--resume",
    "resume_search",
    is_flag=True,
    help="With --search optuna: continue this recipe's latest search in the storage up to --trials "
    "(finished trials kept, an interrupted one run again).",
)
@heard_from_the_first_line
def sweep_command(
    name,
    grid,
    dry_run,
    search,
    trials,
    sampler,
    pruner,
    pruner_warmup,
    search_timeout,
    search_seed,
    study_storage,
    parallel,
    resume_search,
    **values,
) -> None:
    """Train every combination of the swept values of recipe NAME (or an Optuna search), one job per trial."""
    from ddpx.cli.sweep_report import print_trial, print_trials
    from ddpx.launch.sweep import plan_sweep, run_sweep

    registry = registry_with_warnings()
    settings = settings_from(registry, values)
    if search == "optuna":
        from ddpx.launch.search import SearchOptions

        options = SearchOptions(
            trials=trials,
            sampler=sampler,
            pruner=pruner,
            pruner_warmup=pruner_warmup,
            timeout_s=search_timeout,
            seed=search_seed,
            storage=study_storage,
            resume=resume_search,
        )
        return search_command(registry, name, grid, settings, options, dry_run, parallel)
    sweep = plan_sweep(registry, name, grid, settings)
    slots = trial_slots(registry, sweep.trials[0].job, parallel)
    if dry_run:
        print_trials(sweep, title=f"ddpx sweep {name}: {len(sweep.trials)} trial(s), nothing started")
        return
    first = sweep.trials[0].job
    click.echo(
        f"ddpx: sweep of {sweep.trials[0].recipe.name}, {len(sweep.trials)} trial(s) on {first.world_size} "
        f"rank(s) each{at_once(slots)}, launcher {first.launch.launcher}, backend {first.launch.backend}"
    )
    with sweep_stop_hint(
        "A grid sweep has no --resume: the same command runs every trial again (leave the finished "
        "values out of the grid to run only the rest)."
    ):
        run_sweep(
            registry, sweep, report=print_trial, warn=lambda text: click.echo(f"Warning: {text}", err=True), slots=slots
        )
    print_trials(sweep, title=f"ddpx sweep {sweep.trials[0].recipe.name}")
    raise_if_failed(sweep)


def trial_slots(registry, job, parallel):
    """This machine's shares for ``parallel`` trials at once (checked before anything starts);
    ``"auto"``: as many as the machine affords."""
    from ddpx.launch.parallel_trials import machine_affords, plan_slots
    from ddpx.launch.plan import submits

    submitted = submits(registry.get("launchers", job.launch.launcher))
    if parallel == "auto":
        parallel = machine_affords(job, submitted)
    return plan_slots(job, parallel, submitted)


def at_once(slots) -> str:
    return f", {len(slots)} at once" if len(slots) > 1 else ""


def search_command(registry, name, grid, settings, options, dry_run, parallel=1) -> None:
    from ddpx.cli.sweep_report import print_trial, print_trials
    from ddpx.contract.run_dir import DEFAULT_ROOT
    from ddpx.launch.search import StudyTrials, create_study, parent_run_of, plan_search, search_params
    from ddpx.launch.sweep import run_sweep
    from ddpx.records.study_pictures import study_pictures

    search = plan_search(registry, name, grid, settings, options)
    first = search.sweep.trials[0]
    slots = trial_slots(registry, first.job, parallel)
    space = " ".join(f"{k}={t}" for k, t in search.texts.items())
    if dry_run:
        click.echo(
            f"ddpx sweep {name}: a search of {space} ({options.trials or 'the whole grid'} trial(s), sampler "
            f"{options.sampler}, pruner {options.pruner}); every key checked, nothing started"
        )
        return
    study = create_study(search, first.recipe.train["max_epochs"])
    click.echo(
        f"ddpx: search of {first.recipe.name} over {space}: {options.trials or 'the grid'} trial(s) on "
        f"{first.job.world_size} rank(s) each{at_once(slots)}, sampler {options.sampler}, pruner {options.pruner}; "
        f"study {study.study_name} in {search.storage}"
    )
    pictures = Path(search.settings.runs_dir or DEFAULT_ROOT).resolve() / f"search-{study.study_name}"
    with sweep_stop_hint(
        f"The study {study.study_name} in {search.storage} keeps the trials that ended: continue "
        "the search with the same command and --resume (the interrupted trial runs again with its "
        "values)."
    ):
        run_sweep(
            registry,
            search.sweep,
            report=print_trial,
            warn=lambda text: click.echo(f"Warning: {text}", err=True),
            source=StudyTrials(registry, search, study),
            extra_params=search_params(search, study),
            artifacts=lambda: study_pictures(study, pictures),
            parent_run_id=parent_run_of(study),
            slots=slots,
        )
    print_trials(search.sweep, title=f"ddpx sweep {first.recipe.name} (search)")
    raise_if_failed(search.sweep)


def raise_if_failed(sweep) -> None:
    if sweep.failed:
        raise JobFailed(
            f"{len(sweep.failed)} of {len(sweep.trials)} trial(s) failed: "
            + "; ".join(f"trial {t.number} ({t.label})" for t in sweep.failed)
            + ". Each failed trial's run folder holds its error.",
            1,
        )
