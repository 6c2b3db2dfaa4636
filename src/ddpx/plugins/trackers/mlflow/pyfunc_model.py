"""The best model of a run as an MLflow model, loaded without unpickling anything.

The logged model is a pyfunc whose data is the run's ``model/`` folder — the weights-only
``state_dict.pt`` and ``model.json`` — with this module as its ``loader_module``: MLflow imports
it and calls :func:`_load_pyfunc`, which rebuilds the model through the installed plugins'
registries and answers tables through its task's ``TablePredictor``. So
``mlflow.pyfunc.load_model(uri).predict(table)``, ``mlflow models predict`` and ``mlflow models
serve`` (on an environment with ddpx and the task's plugin installed) give what ``ddpx predict``
gives.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from ddpx.api import load_table_predictor


class DdpxModel:
    """What MLflow calls ``predict`` on."""

    def __init__(self, folder: str):
        self._predict = load_table_predictor(folder)

    def predict(self, model_input: Any, params: dict[str, Any] | None = None) -> Any:
        """The answers to ``model_input``; ``params={"coverage": C}`` (0 < C < 1) adds each answer's
        conformal interval or set, as ``ddpx predict --coverage C`` does (0, the default: none)."""
        import pandas as pd

        table = model_input if isinstance(model_input, pd.DataFrame) else pd.DataFrame(model_input)
        coverage = float((params or {}).get("coverage") or 0)
        return self._predict(table, coverage=coverage) if coverage else self._predict(table)


def _load_pyfunc(data_path: str) -> DdpxModel:
    """MLflow's entry point for a ``loader_module``: the model folder it stored."""
    return DdpxModel(str(Path(data_path)))


def log_best_model(folder: Path, run_id: str, register: str | None) -> str:
    """Log ``folder`` as the run's MLflow model (held-out metrics attached, a signature and an
    input example from the task); with ``register``, a new version of that registered model.
    Returns the logged model's id. The tracking URI is set (``mlflow.set_tracking_uri``)."""
    import mlflow
    import torch
    from mlflow.models import infer_signature

    from ddpx import __version__

    predict = load_table_predictor(folder)
    example = predict.example
    with warnings.catch_warnings():  # MLflow's hint about integer columns (a class index) is not the user's to act on
        warnings.filterwarnings("ignore", message="Hint: Inferred schema contains integer column")
        signature = infer_signature(example, predict(example), params={"coverage": 0.0})
    with mlflow.start_run(run_id=run_id, log_system_metrics=False):
        info = mlflow.pyfunc.log_model(
            name="model",
            loader_module=__name__,
            data_path=str(folder),
            input_example=example,
            signature=signature,
            registered_model_name=register,
            pip_requirements=[f"ddpx=={__version__}", f"torch=={torch.__version__.split('+')[0]}"],
        )
    return info.model_id
