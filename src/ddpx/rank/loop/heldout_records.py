"""Rank 0's records of a run's result, a single model's or an ensemble's: the calibration fitted on
the dev predictions, the held-out reports with their uncertainty columns and pictures, and the
model folder with its calibration (:mod:`ddpx.records.uncertainty_reports`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from ddpx.contract.outputs import ensemble_answer_loss
from ddpx.rank.loop.evaluation import Predictions
from ddpx.rank.run_context import RunContext
from ddpx.records.model_export import write_model_files
from ddpx.records.reports import heldout_reports
from ddpx.records.uncertainty_figures import uncertainty_figures
from ddpx.records.uncertainty_reports import record_uncertainty


def write_heldout_records(
    run: RunContext,
    info: Mapping[str, Any],
    dev: Predictions,
    heldout: Predictions,
    weights: Any,
    spread: torch.Tensor | None = None,
) -> dict[str, float]:
    """Rank 0: the records of ``dev`` and ``heldout`` and the model of ``weights`` (a state dict, or
    an ensemble's list of them); returns the held-out uncertainty metrics. An ensemble's (with its
    held-out ``spread`` across members) are what it answers (:func:`ddpx.records.ensemble.answer`:
    a regression's mean with its variance), read by the loss
    :func:`~ddpx.contract.outputs.ensemble_answer_loss` names: its variance is calibrated and
    measured as a variance head's."""
    folder, loss = run.run_dir.path, run.parts.task.loss
    answered = loss if spread is None else ensemble_answer_loss(loss)
    record = record_uncertainty(dev, heldout, answered, info, run.train["calibration"])
    columns = None if spread is None else spread.numpy()
    reports = heldout_reports(heldout, answered, info, folder / "reports", columns, record.columns)
    for path in reports + uncertainty_figures(record, heldout, folder / "reports"):
        run.log_artifact(path)
    for path in [
        *write_model_files(folder / "model", weights, run.job.config, info, loss),
        record.calibration.save(folder / "model"),
    ]:
        run.log_artifact(path, "model")
    return record.metrics
