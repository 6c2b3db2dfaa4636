"""A saved view of an experiment's runs list: the held-out metric first and best first, with the
params that differ between the experiment's runs.

MLflow's UI keeps a saved view (its "Views" menu, "Save as new view") as the experiment tag
``mlflow.sharedViewState.<id>``: a JSON envelope whose ``state`` is the runs page's own state
(the columns shown, the sort). ddpx writes one such view, :data:`VIEW_ID`, and refreshes its
columns each time a run finishes; the experiment link ddpx prints names it
(``viewStateShareKey``), so the runs list opens answering "which run was best, and why?".
"""

from __future__ import annotations

import json
import time
from typing import Any

from ddpx.plugins.trackers.mlflow.runs import row_of, varying_params
from ddpx.plugins.trackers.mlflow.ui_links import VIEW_ID

VIEW_NAME = "ddpx: best held-out first"
TAG_PREFIX = "mlflow.sharedViewState."
VIEW_TAG = TAG_PREFIX + VIEW_ID
MAX_PARAM_COLUMNS = 8  # the swept keys of a sweep fit; more would push the metric out of sight
RUNS_READ = 200  # the newest runs whose params decide which ones vary


def column(kind: str, key: str) -> str:
    """A column of the runs list, as the UI names it (``metrics.`heldout_accuracy```)."""
    return f"{kind}.`{key}`"


def view_state(metric: str, higher_is_better: bool, params: list[str]) -> dict[str, Any]:
    """The runs page's whole state, as the UI saves it: the metric column first, then the varying
    params; best run first; every run drawn in the charts (the UI's default is the first ten)."""
    columns = [column("metrics", metric), *(column("params", p) for p in params[:MAX_PARAM_COLUMNS])]
    return {
        "searchFilter": "",
        "orderByKey": column("metrics", metric),
        "orderByAsc": not higher_is_better,
        "startTime": "ALL",
        "lifecycleFilter": "Active",
        "datasetsFilter": [],
        "modelVersionFilter": "All Runs",
        "selectedColumns": [*columns, "attributes.`Models`"],
        "columnOrder": columns,  # next to the run's name, before Created and Duration
        "columnWidths": {},
        "runsExpanded": {},
        "runsPinned": [],
        "runsHidden": [],
        "runsVisibilityMap": {},
        "runsHiddenMode": "SHOW_ALL",
        "viewMaximized": False,
        "runListHidden": False,
        "isAccordionReordered": False,
        "useGroupedValuesInCharts": True,
        "hideEmptyCharts": True,
        "groupBy": None,
        "groupsExpanded": {},
        "autoRefreshEnabled": True,
        "globalLineChartConfig": {"xAxisKey": "step", "lineSmoothness": 0, "selectedXAxisMetricKey": ""},
    }


def envelope(state: dict[str, Any], created_ms: int, updated_ms: int) -> str:
    return json.dumps({"name": VIEW_NAME, "createdAt": created_ms, "updatedAt": updated_ms, "state": json.dumps(state)})


def created_at(existing: str | None, now_ms: int) -> int:
    try:
        return int(json.loads(existing)["createdAt"]) if existing else now_ms
    except (ValueError, KeyError, TypeError):
        return now_ms


def refresh_view(client: Any, experiment_id: str, metric: str, higher_is_better: bool) -> None:
    """Write (or update) the view of ``experiment_id`` from its newest runs' params."""
    runs = client.search_runs([experiment_id], max_results=RUNS_READ, order_by=["attributes.start_time DESC"])
    params = varying_params([row_of(run) for run in runs])
    experiment = client.get_experiment(experiment_id)
    now = int(time.time() * 1000)
    value = envelope(view_state(metric, higher_is_better, params), created_at(experiment.tags.get(VIEW_TAG), now), now)
    client.set_experiment_tag(experiment_id, VIEW_TAG, value)
