"""``ddpx predict MODEL INPUT``: a trained model's predictions for a table of inputs.

A run's ``model/`` folder is loaded here; any other MODEL (an MLflow run id or model URI) is the
plugins' to load, through the ``ddpx_load_predictor`` hook (the MLflow tracker plugin's, built in).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ddpx.cli.app import cli, registry_with_warnings
from ddpx.contract.errors import UserError

PREDICT_EPILOG = """\b
Examples:
  ddpx predict ddpx-runs/bbbp_rnn-20261123-101500-ab12/model molecules.csv
  # an MLflow run id; a registered model on a tracking server
  ddpx predict 3f2c...e91 molecules.csv --output predictions.csv
  ddpx predict models:/bbbp/1 molecules.csv \\
      --tracking-uri http://127.0.0.1:5000
  # 90 % intervals; a folder of images
  ddpx predict ddpx-runs/esol_dmpnn-.../model molecules.csv --coverage 0.9
  ddpx predict ddpx-runs/mnist_convnet-.../model digits/

INPUT is a CSV with the columns the task reads (a `smiles` column for the SMILES
tasks; x0, x1, ... for mlp_synthetic), or a folder of images for the image
tasks. The output is INPUT's rows with the model's answers (a `probability` of
label 1; a `predicted` class and its `probability`; a `prediction`, and its
`variance` from a model with a variance head), as CSV. An ensemble's model
(train.ensemble_size) answers with its members' mean and adds `ensemble_spread`:
the standard deviation of each answer across its members, in the answer's units;
a regression ensemble's `variance` is its spread squared (z-scaled, with
train.calibration=zscaling), read as a variance head's is.
--coverage 0.9 adds `lower` and `upper` (a regression) or `set` (0/1 labels).
"""

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")


def image_table(folder: Path) -> Any:
    """A table with a ``path`` column: the folder's image files, sorted."""
    import pandas as pd

    images = sorted(str(p) for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not images:
        raise UserError(
            f"folder '{folder}' holds no image file ({', '.join(IMAGE_SUFFIXES)}). Give a folder of "
            "images for an image model, or a CSV file."
        )
    return pd.DataFrame({"path": images})


def read_table(path: str) -> Any:
    import pandas as pd

    source = Path(path)
    if source.is_dir():
        return image_table(source)
    if not source.is_file():
        raise UserError(
            f"input '{path}' does not exist. Give a CSV with one row per input (a 'smiles' column for a "
            "SMILES model), or a folder of images for an image model."
        )
    try:
        return pd.read_csv(source)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise UserError(
            f"cannot read '{path}' as CSV ({type(exc).__name__}: {str(exc).splitlines()[0]}). Give a "
            "UTF-8 CSV file with a header row."
        ) from None


def load_predictor(model: str, tracking_uri: str | None) -> Callable[[Any], Any]:
    folder = Path(model)
    if (folder / "model.json").is_file():
        from ddpx.records.model_export import load_table_predictor

        return load_table_predictor(folder)
    if folder.exists() or ("/" in model and ":" not in model):
        raise UserError(
            f"'{model}' is not a ddpx model folder (it has no model.json): point to a run's model/ "
            "folder, or give an MLflow run id or model URI."
        )
    predictor = registry_with_warnings().pm.hook.ddpx_load_predictor(model=model, tracking_uri=tracking_uri)
    if predictor is None:
        raise UserError(
            f"'{model}' is not a ddpx model folder, and no installed plugin loads it as a model "
            "(an MLflow run id or model URI needs the mlflow plugin: `ddpx plugins` lists them)."
        )
    return predictor


@cli.command("predict", epilog=PREDICT_EPILOG)
@click.argument("model")
@click.argument("input_path", metavar="INPUT")
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the predictions here as CSV.  [default: standard output]",
)
@click.option(
    "--tracking-uri",
    default=None,
    envvar="MLFLOW_TRACKING_URI",
    help="MLflow store for a run id or model URI.  [default: sqlite:///mlflow.db here]",
)
@click.option(
    "--coverage",
    type=float,
    default=None,
    help="Add each answer's conformal interval (lower, upper: a regression) or prediction set (set: 0/1 "
    "labels) holding this share of true values, e.g. 0.9; fitted on the run's dev split.  [default: none]",
)
def predict_command(model, input_path, output, tracking_uri, coverage) -> None:
    """Predict with a trained model: MODEL is a run's model/ folder, an MLflow run id, or an MLflow
    model URI; INPUT a CSV of inputs. Loading never unpickles anything: the weights are a plain
    state dict and the model is rebuilt through the installed plugins. A run's calibrator
    (train.calibration) is applied to what the model answers."""
    if coverage is not None:
        from ddpx.records.conformal_columns import check_coverage

        check_coverage(coverage)
    table = read_table(input_path)
    predictor = load_predictor(model, tracking_uri)
    predictions = predictor(table) if coverage is None else predictor(table, coverage=coverage)
    if output:
        predictions.to_csv(output, index=False)
        click.echo(f"ddpx: {len(predictions)} prediction(s) written to {output}", err=True)
    else:
        predictions.to_csv(sys.stdout, index=False)
    unanswered = unanswered_rows(predictions)
    if unanswered:
        rows = ", ".join(str(i + 2) for i in unanswered[:5]) + (", ..." if len(unanswered) > 5 else "")
        click.echo(
            f"ddpx: {len(unanswered)} row(s) the model cannot read were left unanswered (line {rows} of "
            f"{input_path}); the 'problem' column says why for each.",
            err=True,
        )


def unanswered_rows(predictions) -> list[int]:
    """The rows a task's predictor marked in its ``problem`` column (``TablePredictor``'s convention)."""
    if "problem" not in getattr(predictions, "columns", ()):
        return []
    return [i for i, problem in enumerate(predictions["problem"]) if isinstance(problem, str) and problem]
