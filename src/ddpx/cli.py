"""The ``ddpx`` command line: run recipes, list and show them, inspect plugins.

Heavy libraries (torch, mlflow) are imported only inside the commands that train; ``--help``,
``ddpx recipes`` and ``ddpx show`` stay fast. A user mistake is one ``Error:`` paragraph and
exit code 2; a job that fails is its first rank's error, shown once, and exit code 1.
"""

from __future__ import annotations

import json
import sys

import click

from ddpx import __version__
from ddpx.core.errors import JobFailed, UserError

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


class DdpxGroup(click.Group):
    """Turns ddpx's own errors into one clear message and the right exit code."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as exc:
            click.echo(f"Error: {exc.message}", err=True)
            ctx.exit(exc.exit_code)
        except JobFailed as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(exc.exit_code)


def _console():
    """A terminal's own width; a wide page when the output goes to a file or a pipe."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)


def _registry():
    from ddpx.core.registry import load_registry

    registry = load_registry()
    for error in registry.pm.load_errors:
        click.echo(f"Warning: {error.message}", err=True)
    return registry


@click.group(cls=DdpxGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="ddpx")
def cli() -> None:
    """ddpx: plugin-based experiments with PyTorch DistributedDataParallel.

    \b
    Quick start:
      ddpx recipes                       list the recipes
      ddpx recipe mlp_synthetic          train one on 2 CPU ranks (or every GPU)
      mlflow ui                          compare runs
    """


@cli.command("recipe", epilog=RECIPE_EPILOG)
@click.argument("name")
@click.argument("overrides", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--launcher", default="spawn", show_default=True, help="How ranks start: spawn, torchrun, slurm, or a plugin's.")
@click.option("--nproc", type=int, default=None, help="Ranks per node.  [default: one per GPU, or 2 without GPUs]")
@click.option("--nnodes", type=int, default=1, show_default=True, help="Number of machines.")
@click.option("--node-rank", type=int, default=0, show_default=True, help="This machine's index (multi-node).")
@click.option("--master-addr", default="127.0.0.1", show_default=True, help="Address of node 0 (spawn launcher).")
@click.option("--master-port", type=int, default=None, help="Rendezvous port on node 0.  [default: a free port]")
@click.option("--rdzv-endpoint", default=None, help="HOST:PORT rendezvous for multi-node torchrun.")
@click.option("--max-restarts", type=int, default=0, show_default=True, help="Restarts on failure (torchrun).")
@click.option("--backend", default="auto", show_default=True, help="auto (nccl with one GPU per rank, else gloo), nccl or gloo.")
@click.option("--tracking", default="mlflow", show_default=True, help="Tracker: mlflow, or none to disable.")
@click.option("--tracking-uri", default=None, envvar="MLFLOW_TRACKING_URI", help="MLflow store or server.  [default: sqlite:///mlflow.db here]")
@click.option("--experiment", default="ddpx", show_default=True, help="MLflow experiment name.")
@click.option("--run-dir", default=None, help="Folder for run folders.  [default: ./ddpx-runs]")
@click.option("--resume", default=None, metavar="auto|PATH",
              help="Continue the latest run of this recipe (auto) or from a checkpoint file.")
@click.option("--timeout", "timeout_s", type=float, default=1800.0, show_default=True,
              help="Seconds a rank waits for the others in a collective before the job fails.")
@click.option("--partition", default=None, help="Slurm partition (--launcher slurm).")
@click.option("--time", "time_limit", default=None, metavar="HH:MM:SS", help="Slurm time limit (--launcher slurm).")
@click.option("--account", default=None, help="Slurm account (--launcher slurm).")
@click.option("--sbatch-arg", "sbatch_args", multiple=True, metavar="ARG",
              help="Extra #SBATCH line, e.g. --sbatch-arg=--qos=high (repeatable; --launcher slurm).")
@click.option("--signal-seconds", type=int, default=90, show_default=True,
              help="Slurm sends USR1 this long before the time limit: checkpoint and requeue (--launcher slurm).")
@click.option("--wait", is_flag=True, help="Follow the Slurm job's log and exit with its status (--launcher slurm).")
@click.option("--dry-run", is_flag=True, help="Print the sbatch script and submit nothing (--launcher slurm).")
def recipe_command(name, overrides, launcher, nproc, nnodes, node_rank, master_addr, master_port, rdzv_endpoint,
                   max_restarts, backend, tracking, tracking_uri, experiment, run_dir, resume, timeout_s, partition,
                   time_limit, account, sbatch_args, signal_seconds, wait, dry_run) -> None:
    """Train recipe NAME (a built-in name or a .toml path) with DDP.

    Every rank runs the same program; the held-out metric is computed exactly over the whole
    held-out split, and the run is logged to MLflow.
    """
    from ddpx.core.launching import LaunchOptions, plan_job, run_job
    from ddpx.core.recipes import resolve_recipe
    from ddpx.core.summary import print_summary

    registry = _registry()
    recipe = resolve_recipe(registry, name, overrides)
    options = LaunchOptions(launcher=launcher, nproc=nproc, nnodes=nnodes, node_rank=node_rank,
                            master_addr=master_addr, master_port=master_port, rdzv_endpoint=rdzv_endpoint,
                            max_restarts=max_restarts, backend=backend, tracking=tracking,
                            tracking_uri=tracking_uri, experiment=experiment, resume=resume, timeout_s=timeout_s,
                            launcher_options={"partition": partition, "time": time_limit, "account": account,
                                              "sbatch_args": list(sbatch_args), "signal_seconds": signal_seconds,
                                              "wait": wait, "dry_run": dry_run})
    job = plan_job(registry, recipe, options)
    click.echo(f"ddpx: {recipe.name} on {job.world_size} rank(s), launcher {job.launcher}, backend {job.backend}")
    summary = run_job(registry, recipe, job, run_dir, resume)
    if summary is None and job.launcher_options.get("detached"):
        return
    if summary is None:
        click.echo(f"ddpx: this machine's {job.nproc_per_node} rank(s) finished; global rank 0 ran on another "
                   "machine, which reports the results and logged the run.")
        return
    print_summary(recipe.name, summary)


@cli.command("recipes")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def recipes_command(as_json: bool) -> None:
    """List the recipes every installed plugin provides."""
    from dataclasses import asdict

    from ddpx.core.recipes import list_recipes

    rows = list_recipes(_registry())
    if as_json:
        click.echo(json.dumps([asdict(r) for r in rows], indent=2))
        return
    from rich.table import Table

    table = Table(title="ddpx recipes", title_justify="left")
    for column in ("name", "task", "model", "metric"):
        table.add_column(column, no_wrap=True)
    table.add_column("description", overflow="fold")
    for row in rows:
        table.add_row(row.name, row.task, row.model, row.metric, row.description)
    _console().print(table)
    click.echo("Run one with `ddpx recipe NAME`; see its keys with `ddpx show NAME`.")


@cli.command("show")
@click.argument("name")
@click.argument("overrides", nargs=-1, metavar="[KEY=VALUE]...")
def show_command(name: str, overrides: tuple[str, ...]) -> None:
    """Print recipe NAME fully resolved (defaults, file, overrides) as TOML."""
    from ddpx.core.recipes import resolve_recipe

    recipe = resolve_recipe(_registry(), name, overrides)
    click.echo(f"# recipe {recipe.name} from {recipe.source}")
    click.echo(recipe.to_toml(), nl=False)


@cli.command("cp")
@click.argument("name")
@click.argument("dest", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Overwrite DEST if it exists.")
def cp_command(name: str, dest: str, force: bool) -> None:
    """Copy recipe NAME to DEST (a .toml file) to edit it; run it with `ddpx recipe DEST`."""
    import shutil
    from pathlib import Path

    from ddpx.core.recipes import find_recipe

    source = find_recipe(_registry(), name)
    target = Path(dest)
    if target.suffix != ".toml":
        raise UserError(f"'{dest}' should end in .toml, so that `ddpx recipe {dest}` reads it as a recipe file.")
    if target.exists() and not force:
        raise UserError(f"'{dest}' already exists; choose another name or add --force to overwrite it.")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    click.echo(f"copied {source.name} to {target}; edit it, then run `ddpx recipe {target}`")


@cli.group("plugins", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_context
def plugins_command(ctx: click.Context, as_json: bool) -> None:
    """List every plugin: distribution, version, hooks, and what it registers.

    `ddpx plugins check NAME` checks that an installed plugin conforms to the contract.
    """
    if ctx.invoked_subcommand is not None:
        return
    from ddpx.core.plugin_report import plugin_report

    registry = _registry()
    report = plugin_report(registry)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    from rich.table import Table

    table = Table(title="ddpx plugins", title_justify="left")
    for column in ("name", "distribution", "version", "hooks", "registers"):
        table.add_column(column, overflow="fold")
    for plugin in report["plugins"]:
        registers = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in plugin["registers"].items())
        table.add_row(plugin["name"], plugin["distribution"] or "-", plugin["version"] or "-",
                      ", ".join(plugin["hooks"]), registers)
    _console().print(table)
    for error in report["errors"]:
        click.echo(f"not loaded: {error['message']}")


@plugins_command.command("check")
@click.argument("name")
@click.option("--nproc", type=int, default=2, show_default=True, help="CPU ranks for the short training runs.")
def plugins_check_command(name: str, nproc: int) -> None:
    """Check plugin NAME (a plugin or its distribution): it loads, its hooks match the specs, its
    names clash with no other plugin, and its recipes train and produce their metric on CPU."""
    from ddpx.core.plugin_check import check_plugin

    checks = check_plugin(_registry(), name, nproc)
    for check in checks:
        mark = click.style("PASS", fg="green") if check.passed else click.style("FAIL", fg="red")
        click.echo(f"{mark}  {check.name}: {check.detail}")
    failed = sum(not c.passed for c in checks)
    click.echo(f"{len(checks) - failed} passed, {failed} failed")
    if failed:
        raise SystemExit(1)


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="ddpx")


if __name__ == "__main__":
    main(sys.argv[1:])
