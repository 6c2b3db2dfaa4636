"""Addresses in the MLflow UI: a page in its model-training view, and an experiment's runs list
opened in ddpx's saved view (:data:`VIEW_ID`, which :mod:`.views` writes)."""

from __future__ import annotations

from urllib.parse import urlencode

LOCAL_UI = "http://127.0.0.1:5000"  # where `mlflow ui` serves a local store
VIEW_ID = "ddpx-best-first"  # the saved view of an experiment's runs, best first


def ui_link(path: str, **query: str) -> str:
    """A path of the MLflow UI that opens in its model-training view (the UI reads the view from
    the ``workflowType`` query parameter, else from what the browser last chose, else GenAI)."""
    return f"#/{path}?" + urlencode({"workflowType": "machine_learning", **query})


def best_first_link(experiment_id: str) -> str:
    """The runs list of ``experiment_id`` in ddpx's saved view: best run first."""
    return ui_link(f"experiments/{experiment_id}/runs", viewStateShareKey=VIEW_ID)
