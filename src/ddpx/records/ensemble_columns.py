"""What an ensemble answers with, named without importing torch: the losses whose outputs it
averages (checked before launch) and its spread's columns (the reports and the table predictor).
How it averages: :mod:`ddpx.records.ensemble`; the form of its answers:
:func:`ddpx.contract.outputs.ensemble_answer_loss`."""

from __future__ import annotations

from collections.abc import Sequence

from ddpx.contract.outputs import VARIANCE_LOSSES

COMBINED = ("bce_with_logits", "cross_entropy", "mse", *VARIANCE_LOSSES)
SPREAD_COLUMN = "ensemble_spread"


def spread_names(count: int, labels: Sequence[str]) -> list[str]:
    """The spread's column names: ``ensemble_spread``, or ``ensemble_spread_<label>`` for each of several."""
    if count == 1:
        return [SPREAD_COLUMN]
    names = list(labels) if len(labels) == count else [str(j) for j in range(count)]
    return [f"{SPREAD_COLUMN}_{name}" for name in names]
