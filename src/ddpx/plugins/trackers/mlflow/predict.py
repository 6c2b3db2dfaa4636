"""``ddpx predict`` for a model in MLflow: a run id, ``runs:/RUN_ID/model``, ``models:/NAME/VERSION``
(the ``ddpx_load_predictor`` hook of the MLflow tracker plugin), loaded as MLflow's pyfunc."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ddpx.api import UserError
from ddpx.plugins.trackers.mlflow.store import existing_store

RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def from_mlflow(model: str, tracking_uri: str | None) -> Callable[[Any], Any]:
    """An MLflow model (a run id, ``runs:/``, ``models:/``) of the store ``tracking_uri`` (which
    must exist), loaded as MLflow's pyfunc, as ``predict(table, coverage=None)``; one that cannot
    be loaded is a :class:`UserError`."""
    import mlflow
    from mlflow.exceptions import MlflowException

    uri = existing_store(tracking_uri)
    mlflow.set_tracking_uri(uri)
    model_uri = f"runs:/{model}/model" if RUN_ID.match(model) else model
    try:
        loaded = mlflow.pyfunc.load_model(model_uri)
    except (MlflowException, OSError) as exc:
        message = getattr(exc, "message", str(exc)).splitlines()[0]
        raise UserError(
            f"cannot load the model '{model}' from {uri}: {message}. Give a run id of this store, a "
            "model URI (runs:/RUN_ID/model, models:/NAME/VERSION), or a run's model/ folder."
        ) from None

    def predict(table: Any, coverage: float | None = None) -> Any:
        return loaded.predict(table, params={"coverage": coverage} if coverage else None)

    return predict
