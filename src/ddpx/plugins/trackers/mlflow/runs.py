"""Reading ddpx runs back from MLflow for ``ddpx runs``: grouped by recipe, best first.

Each recipe's runs are judged by its held-out metric (the run's ``ddpx.metric`` tag names it and
``ddpx.metric_direction`` says whether higher is better); the params worth showing are the ones
that differ between that recipe's listed runs (the swept keys of a sweep, a changed model size),
the same ones MLflow's compare view highlights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ddpx.api import UserError
from ddpx.plugins.trackers.mlflow.store import existing_store, is_http
from ddpx.plugins.trackers.mlflow.ui_links import LOCAL_UI, best_first_link

NEVER_SHOWN = {"description", "name", "task", "model.name"}
FETCHED = 1000  # runs read from the store at most, newest first


@dataclass
class RunRow:
    run_id: str
    name: str
    status: str
    recipe: str
    experiment_id: str
    started: int  # ms since the epoch
    ended: int | None
    sweep: str  # "parent", "trial N", or ""
    metric: str  # the held-out metric that judges the run, "heldout_<name>"
    higher_is_better: bool
    params: dict[str, str]
    metrics: dict[str, float]

    @property
    def duration_s(self) -> float | None:
        return (self.ended - self.started) / 1000 if self.ended and self.started else None

    @property
    def score(self) -> float | None:
        """The run's held-out metric (a sweep's parent: its best trial's)."""
        return self.metrics.get(self.metric, self.metrics.get(f"best_{self.metric}"))


@dataclass
class RecipeRuns:
    """One recipe's listed runs, best first, with the params that differ between them."""

    recipe: str
    metric: str
    rows: list[RunRow]
    varying: list[str] = field(default_factory=list)


@dataclass
class RunListing:
    uri: str
    groups: list[RecipeRuns]

    @property
    def rows(self) -> list[RunRow]:
        return [row for group in self.groups for row in group.rows]

    def ui_base(self) -> str:
        return self.uri.rstrip("/") if is_http(self.uri) else LOCAL_UI

    def how_to_open(self) -> str:
        """What to run first to see these runs in a browser ('' for a server)."""
        return "" if is_http(self.uri) else f"mlflow ui --backend-store-uri {self.uri}"

    def experiment_urls(self) -> list[str]:
        """Each listed recipe's experiment in the UI's model-training view, in ddpx's saved view:
        the held-out metric and the varying params as columns, best run first."""
        found = sorted({group.rows[0].experiment_id for group in self.groups})
        return [f"{self.ui_base()}/" + best_first_link(experiment_id) for experiment_id in found]

    def compare_url(self) -> str:
        """MLflow's compare page for every listed run."""
        runs = json.dumps([r.run_id for r in self.rows], separators=(",", ":"))
        experiments = json.dumps(list(dict.fromkeys(r.experiment_id for r in self.rows)), separators=(",", ":"))
        return f"{self.ui_base()}/#/compare-runs?runs={runs}&experiments={experiments}&workflowType=machine_learning"


def row_of(run: Any) -> RunRow:
    tags = run.data.tags
    sweep = (
        "parent"
        if tags.get("ddpx.sweep") == "parent"
        else (f"trial {tags['ddpx.sweep.trial']}" if "ddpx.sweep.trial" in tags else "")
    )
    metrics = dict(run.data.metrics)
    metric = tags.get("ddpx.metric") or next(
        (m for m in sorted(metrics) if m.startswith("heldout_") and m not in ("heldout_loss", "heldout_samples")),
        "heldout_loss",
    )
    status = "PRUNED" if tags.get("ddpx.trial_state") == "PRUNED" else run.info.status  # a search's stopped trial
    return RunRow(
        run.info.run_id,
        run.info.run_name or run.info.run_id[:8],
        status,
        tags.get("ddpx.recipe", ""),
        run.info.experiment_id,
        run.info.start_time or 0,
        run.info.end_time,
        sweep,
        metric,
        tags.get("ddpx.metric_direction", "max") != "min" and metric != "heldout_loss",
        dict(run.data.params),
        metrics,
    )


def experiment_ids(client: Any, uri: str, experiment: str | None) -> list[str]:
    if experiment is None:
        return [e.experiment_id for e in client.search_experiments()]
    found = client.get_experiment_by_name(experiment)
    if found is None:
        names = sorted(e.name for e in client.search_experiments())
        raise UserError(
            f"there is no experiment '{experiment}' in {uri}. Its experiments are: "
            f"{', '.join(names) or 'none'}; choose one with --experiment NAME, or leave it out for all."
        )
    return [found.experiment_id]


def best_first(rows: list[RunRow], sort: str | None, ascending: bool) -> list[RunRow]:
    """Runs with a value first, best (or by ``sort``) first; the rest newest first."""

    def value(row: RunRow) -> float | None:
        return row.metrics.get(sort) if sort else row.score

    newest = sorted(rows, key=lambda r: -r.started)
    scored = [r for r in newest if value(r) is not None]
    higher = (not ascending) if sort else (rows[0].higher_is_better if rows else True)
    scored.sort(key=lambda r: value(r), reverse=higher)
    return scored + [r for r in newest if value(r) is None]


def varying_params(rows: list[RunRow]) -> list[str]:
    """The params that differ between the runs (a sweep's parent, which has no recipe params, aside)."""
    runs = [r for r in rows if r.sweep != "parent"]
    keys = sorted({k for r in runs for k in r.params} - NEVER_SHOWN)
    return [k for k in keys if len({r.params.get(k) for r in runs}) > 1]


def list_runs(
    uri: str | None,
    experiment: str | None = None,
    recipe: str | None = None,
    sort: str | None = None,
    ascending: bool = False,
    limit: int = 20,
) -> RunListing:
    """ddpx's runs, by recipe, best first (or by ``sort``), at most ``limit`` per recipe."""
    import logging

    from mlflow.tracking import MlflowClient

    if limit < 1:
        raise UserError(f"--limit must be at least 1, not {limit}.")
    logging.getLogger("mlflow").setLevel(logging.WARNING)
    uri = existing_store(uri)
    client = MlflowClient(uri)
    ids = experiment_ids(client, uri, experiment)
    where = f"tags.`ddpx.recipe` = '{recipe}'" if recipe else "tags.`ddpx.recipe` LIKE '%'"
    rows = (
        [
            row_of(run)
            for run in client.search_runs(
                ids, filter_string=where, max_results=FETCHED, order_by=["attributes.start_time DESC"]
            )
        ]
        if ids
        else []
    )
    if sort and rows and not any(sort in r.metrics for r in rows):
        known = sorted({m for r in rows for m in r.metrics if not m.startswith("system/")})
        raise UserError(f"no listed run has the metric '{sort}'. Sort by one of: {', '.join(known)}.")
    groups = []
    # the recipe run most recently first; a recipe judged by its dataset keys (classification or
    # regression of one's own file) gets a table per metric, each ordered in its own direction
    for name, metric in dict.fromkeys((r.recipe, r.metric) for r in rows):
        mine = best_first([r for r in rows if (r.recipe, r.metric) == (name, metric)], sort, ascending)[:limit]
        groups.append(RecipeRuns(name, metric, mine, varying_params(mine)))
    return RunListing(uri=uri, groups=groups)
