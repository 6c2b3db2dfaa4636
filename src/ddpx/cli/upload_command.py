"""``ddpx upload RUN_DIR``: record a finished run folder in MLflow after the fact."""

from __future__ import annotations

from pathlib import Path

import click

from ddpx.cli.app import cli, console, registry_with_warnings

UPLOAD_EPILOG = """\b
Examples:
  ddpx upload ddpx-runs/bbbp_rnn-20261123-101500-ab12
  ddpx upload ddpx-runs/tiny-... --tracking-uri http://127.0.0.1:5000 \\
      --experiment rerun
  # a pretraining run, then model.encoder_from=models:/moses_pretrain_dmpnn/1
  ddpx upload ddpx-runs/moses_pretrain_dmpnn-... \\
      --register moses_pretrain_dmpnn
"""


@cli.command("upload", epilog=UPLOAD_EPILOG)
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--tracking-uri",
    default=None,
    envvar="MLFLOW_TRACKING_URI",
    help="MLflow store or server.  [default: the run's own, else sqlite:///mlflow.db here]",
)
@click.option("--experiment", default=None, help="MLflow experiment.  [default: the run's own]")
@click.option("--tracking", default="mlflow", show_default=True, help="The tracker to record the run with.")
@click.option("--register", default=None, metavar="NAME", help="Also register the model as a new version of NAME.")
def upload_command(run_dir: Path, tracking_uri, experiment, tracking, register) -> None:
    """Record a finished run folder in MLflow: its params, every epoch's metrics, the held-out
    result, the reports and the best model. For a run whose tracking store went away during
    training (ddpx says so at the end), or one trained with --tracking none.

    If the store holds the run's own MLflow run (the store came back), that run is finished in
    place with the epochs it lacks; otherwise a new run gets everything. A run trained on another
    machine (a lent GPU, with --tracking none) enters this machine's store the same way."""
    from ddpx.records.replay import upload_run

    tracker = upload_run(
        registry_with_warnings(), run_dir, tracking=tracking, uri=tracking_uri, experiment=experiment, register=register
    )
    out = console()
    out.print(f"recorded {run_dir} as run {tracker.run_id}", highlight=False, soft_wrap=True)
    hint = tracker.describe()
    if hint:
        out.print(hint, highlight=False, soft_wrap=True)
