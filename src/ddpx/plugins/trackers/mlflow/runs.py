"""Reading ddpx runs back from MLflow for ``ddpx runs``: their key params and held-out metrics.

The key params are the ones that tell runs apart: ``train.lr``, ``train.batch_size`` and
``world_size`` always, then up to four more that differ between the runs listed (the swept keys
of a sweep, a changed model size...), the same columns MLflow's compare view would highlight.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ddpx.api import UserError
from ddpx.plugins.trackers.mlflow.store import existing_store, is_http

ALWAYS_SHOWN = ("train.lr", "train.batch_size", "world_size")
MORE_VARYING = 4
NEVER_SHOWN = {"description", "name"}


@dataclass
class RunRow:
    run_id: str
    name: str
    status: str
    recipe: str
    started: int  # ms since the epoch
    sweep: str  # "parent", "trial N", or ""
    params: dict[str, str]
    metrics: dict[str, float]


@dataclass
class RunListing:
    uri: str
    experiment: str
    experiment_id: str
    rows: list[RunRow] = field(default_factory=list)
    param_columns: list[str] = field(default_factory=list)
    metric_columns: list[str] = field(default_factory=list)

    def ui_address(self) -> str:
        if is_http(self.uri):
            return f"{self.uri.rstrip('/')}/#/experiments/{self.experiment_id}/runs"
        return (f"`mlflow ui --backend-store-uri {self.uri}`, then open "
                f"http://127.0.0.1:5000/#/experiments/{self.experiment_id}/runs")

    def compare_path(self) -> str:
        """The MLflow UI's compare page for the listed runs (append to the UI's address)."""
        runs = json.dumps([r.run_id for r in self.rows], separators=(",", ":"))
        return f"#/compare-runs?runs={runs}&experiments={json.dumps([self.experiment_id])}"


def _sort_clause(sort: str | None, ascending: bool) -> list[str]:
    if not sort:
        return ["attributes.start_time DESC"]
    name = sort if sort.startswith(("metrics.", "params.", "attributes.")) else f"metrics.`{sort}`"
    return [f"{name} {'ASC' if ascending else 'DESC'}"]


def list_runs(uri: str | None, experiment: str, recipe: str | None = None, sort: str | None = None,
              ascending: bool = False, limit: int = 20) -> RunListing:
    """The experiment's runs (newest first, or by ``sort``), at most ``limit`` of them."""
    import logging

    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    if limit < 1:
        raise UserError(f"--limit must be at least 1, not {limit}.")
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    uri = existing_store(uri)
    client = MlflowClient(uri)
    found = client.get_experiment_by_name(experiment)
    if found is None:
        names = sorted(e.name for e in client.search_experiments())
        raise UserError(f"there is no experiment '{experiment}' in {uri}. Its experiments are: "
                        f"{', '.join(names) or 'none'}; choose one with --experiment NAME.")
    filter_string = f"tags.`ddpx.recipe` = '{recipe}'" if recipe else ""
    try:
        runs = client.search_runs([found.experiment_id], filter_string=filter_string,
                                  order_by=_sort_clause(sort, ascending), max_results=limit)
    except MlflowException as exc:
        raise UserError(f"MLflow could not list the runs ({exc.message}). --sort takes a metric name such as "
                        "heldout_accuracy.") from None
    listing = RunListing(uri=uri, experiment=experiment, experiment_id=found.experiment_id)
    for run in runs:
        tags = run.data.tags
        sweep = "parent" if tags.get("ddpx.sweep") == "parent" else (
            f"trial {tags['ddpx.sweep.trial']}" if "ddpx.sweep.trial" in tags else "")
        listing.rows.append(RunRow(run.info.run_id, run.info.run_name or run.info.run_id[:8], run.info.status,
                                   tags.get("ddpx.recipe", ""), run.info.start_time or 0, sweep,
                                   dict(run.data.params), dict(run.data.metrics)))
    if sort and listing.rows and not any(sort in r.metrics for r in listing.rows) and "." not in sort:
        known = sorted({m for r in listing.rows for m in r.metrics if not m.startswith("system/")})
        raise UserError(f"no listed run has the metric '{sort}'. Sort by one of: {', '.join(known)}.")
    listing.param_columns = _param_columns(listing.rows)
    listing.metric_columns = sorted({m for r in listing.rows for m in r.metrics
                                     if m.startswith(("heldout_", "best_heldout_")) and m != "heldout_samples"})
    return listing


def _param_columns(rows: list[RunRow]) -> list[str]:
    columns = [p for p in ALWAYS_SHOWN if any(p in r.params for r in rows)]
    trials = [r for r in rows if r.sweep != "parent"]
    keys = sorted({k for r in trials for k in r.params} - set(columns) - NEVER_SHOWN)
    varying = [k for k in keys if len({r.params.get(k) for r in trials}) > 1]
    return columns + varying[:MORE_VARYING]
