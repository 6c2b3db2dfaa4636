"""``ddpx study run FILE`` (every declared run, resumable; the choice on dev) and ``ddpx study report``
(the table from the records alone)."""

from __future__ import annotations

from pathlib import Path

import click

from ddpx.cli.app import cli, registry_with_warnings
from ddpx.cli.launch_options import LaunchCommand, settings_from
from ddpx.cli.stop_messages import heard_from_the_first_line, study_stop_hint
from ddpx.contract.errors import JobFailed, UserError


class AutoOrCount(click.ParamType):
    """``auto`` or a whole number of at least 1."""

    name = "auto|P"

    def convert(self, value, param, ctx):
        if value == "auto" or isinstance(value, int):
            return value
        try:
            return int(value)
        except ValueError:
            self.fail(f"{value!r} is neither auto nor a whole number", param, ctx)


AUTO_OR_COUNT = AutoOrCount()

STUDY_EPILOG = """\b
Examples:
  # check and start nothing; then run (again: goes on where it stopped)
  ddpx study run benchmarks/studies/moleculenet.toml --dry-run
  ddpx study run benchmarks/studies/moleculenet.toml
  # a rank a run, as many runs at once as cores; or one run at a time
  ddpx study run benchmarks/studies/moleculenet.toml --nproc 1
  ddpx study run benchmarks/studies/moleculenet.toml --parallel 1
  # on another machine: keep the sets a committed export chose, run the rest
  ddpx study run benchmarks/studies/pretraining.toml \\
      --from-records benchmarks/studies/pretraining.json
  # the table, from the study (its records exported) or from exported records
  ddpx study report benchmarks/studies/moleculenet.toml --export records.json
  ddpx study report records.json

While runs go on, only dev values are shown; once every run of a set has ended, that set's choice is
made on dev and recorded (choice.json, the MLflow parent run), and only then are its held-out values
read: `ddpx study report FILE` gives the chosen sets' table while the later sets still run.
"""


@cli.group("study")
def study_group() -> None:
    """Studies: the sets, candidates, seeds and rule declared in one TOML file, chosen on dev."""


@study_group.command("run", cls=LaunchCommand, epilog=STUDY_EPILOG)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Resolve and check every run, list what would run, start nothing.")
@click.option(
    "--parallel",
    type=AUTO_OR_COUNT,
    default="auto",
    show_default=True,
    metavar="P",
    help="Run P runs at once, each on its own share of this machine's CPU cores (and GPUs); auto: as many "
    "as the machine affords, a core (or a GPU) per rank (one at a time under a scheduler such as Slurm).",
)
@click.option(
    "--choose-with-failures",
    is_flag=True,
    help="Choose even where runs failed, among the candidates whose every seed finished (by default the "
    "choice waits, and the same command reruns what failed).",
)
@click.option(
    "--from-records",
    "from_records",
    type=click.Path(dir_okay=False, path_type=Path),
    help="An export of this same study file (`ddpx study report FILE --export`), committed, say: the sets it "
    "chose are kept as it holds them and not run again; only the others run. For going on where the machine "
    "that held the runs is gone.",
)
@heard_from_the_first_line
def study_run_command(file, dry_run, parallel, choose_with_failures, from_records, **values) -> None:
    """Run every (set, candidate, seed) of the study FILE not yet finished, then choose per set on dev."""
    from ddpx.cli.run_commands import at_once, trial_slots
    from ddpx.cli.study_report import RunProgress, print_choice, print_kept, print_set_chosen, print_table
    from ddpx.config.study_file import read_study
    from ddpx.launch.study import StudyUnfinished, plan_study, run_study
    from ddpx.records.study_kept import read_kept_sets

    registry = registry_with_warnings()
    spec = read_study(file)
    kept = read_kept_sets(from_records, spec) if from_records is not None else None
    study = plan_study(registry, spec, settings_from(registry, values), kept)
    print_kept(study)
    if not study.trials:
        click.echo(
            f"ddpx: study {spec.name}: every set is kept; nothing to run. Its table: ddpx study report {from_records or file}"
        )
        return
    slots = trial_slots(registry, study.trials[0].job, parallel)
    first = study.trials[0].job
    again = f"ddpx study run {file}" + (f" --from-records {from_records}" if from_records is not None else "")
    going_on = sum(t.continues is not None for t in study.to_run)
    click.echo(
        f"ddpx: study {spec.name}: {len(study.trials)} run(s) in {len(spec.sets) - len(study.kept)} set(s)"
        f"{f' ({len(study.kept)} kept)' if study.kept else ''}, "
        f"{len(study.trials) - len(study.to_run)} finished earlier, {len(study.to_run)} to run"
        f"{f' ({going_on} from where they were cut off)' if going_on else ''} on "
        f"{first.world_size} rank(s) each{at_once(slots)}; records in {study.folder.path}"
    )
    if dry_run:
        for trial in study.to_run:
            where = f", going on in {trial.continues}" if trial.continues is not None else ""
            click.echo(f"  would run {trial.label}{where}")
        return
    try:
        with study_stop_hint(again):
            recorded = run_study(
                registry,
                study,
                report=RunProgress(study.to_run, len(slots) if slots else 1),
                warn=lambda text: click.echo(f"Warning: {text}", err=True),
                slots=slots,
                choose_with_failures=choose_with_failures,
                chose=lambda recorded, sets: print_set_chosen(file, recorded, sets),
            )
    except StudyUnfinished as exc:
        raise JobFailed(unfinished_message(exc.trials, again)) from None
    print_choice(recorded)
    print_table(study, recorded)


def unfinished_message(trials, again: str) -> str:
    named = "; ".join(f"{t.label} ({t.job.run_dir.path})" for t in trials[:5])
    more = f"; and {len(trials) - 5} more" if len(trials) > 5 else ""
    return (
        f"{len(trials)} run(s) of the study failed: {named}{more}. Their sets' choice waits until every "
        "declared run of the set has finished, because it is made once and kept: a run that failed once (a "
        "crash, a killed process, a full disk) must not leave its candidate out for good. Run the same command again "
        f"to rerun only those (each folder's log says why it failed): {again}; or add "
        "--choose-with-failures to choose now among the candidates whose every seed finished."
    )


@study_group.command("report", epilog=STUDY_EPILOG)
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--export", type=click.Path(dir_okay=False, path_type=Path), help="Also write the records to this JSON.")
@click.option("--run-dir", "runs_dir", default=None, help="Where the study's runs are (default ./ddpx-runs).")
def study_report_command(source, export, runs_dir) -> None:
    """The study's Markdown table: from a study FILE's records (after its choice), or from exported records (.json)."""
    from ddpx.records.study_report import markdown, read_records, write_records

    if source.suffix == ".json":
        if not source.is_file():
            raise UserError(f"records file '{source}' does not exist; `ddpx study report FILE --export` writes one.")
        click.echo(markdown(read_records(source)), nl=False)
        return
    from ddpx.cli.study_report import exported

    records = exported(source, runs_dir)
    if export is not None:
        write_records(records, export)
    click.echo(markdown(records), nl=False)
