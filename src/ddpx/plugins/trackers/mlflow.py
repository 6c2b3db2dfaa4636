"""The ``mlflow`` tracker: one MLflow run per job, written by rank 0.

The store is ``--tracking-uri``, else ``MLFLOW_TRACKING_URI``, else MLflow's own default
(``sqlite:///mlflow.db`` in the working directory). mlflow is imported only when a run starts.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping

from ddpx import hookimpl
from ddpx.core.components import TrackerSpec
from ddpx.core.job import Job

MAX_PARAM_LENGTH = 6000


class MlflowTracker:
    def __init__(self, job: Job):
        self.uri = job.tracking_uri
        self.experiment = job.experiment
        self.run_id: str | None = None
        self.experiment_id: str | None = None
        self._client: Any = None

    def start(self, *, run_name: str, params: Mapping[str, Any], tags: Mapping[str, str],
              resume_run_id: str | None = None) -> None:
        import logging

        import mlflow
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        logging.getLogger("mlflow").setLevel(logging.WARNING)  # no schema-migration chatter
        if self.uri:
            mlflow.set_tracking_uri(self.uri)
        self.uri = mlflow.get_tracking_uri()
        self._client = MlflowClient(self.uri)
        if resume_run_id:  # a resumed job continues its own run
            run = self._client.get_run(resume_run_id)
            self.run_id, self.experiment_id = run.info.run_id, run.info.experiment_id
            self._client.update_run(self.run_id, status="RUNNING")
            return
        experiment = self._client.get_experiment_by_name(self.experiment)
        self.experiment_id = (
            experiment.experiment_id if experiment else self._client.create_experiment(self.experiment)
        )
        run = self._client.create_run(self.experiment_id, run_name=run_name, tags=dict(tags))
        self.run_id = run.info.run_id
        items = [Param(key, str(value)[:MAX_PARAM_LENGTH]) for key, value in sorted(params.items())]
        for start in range(0, len(items), 100):  # MLflow takes at most 100 params per batch
            self._client.log_batch(self.run_id, params=items[start : start + 100])

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(key, float(value), now, step or 0) for key, value in metrics.items()]
        self._client.log_batch(self.run_id, metrics=batch)

    def log_artifact(self, path: Path) -> None:
        self._client.log_artifact(self.run_id, str(path))

    def finish(self, status: str, error: str | None = None) -> None:
        if error:
            self._client.set_tag(self.run_id, "ddpx.error", error[:5000])
        self._client.set_terminated(self.run_id, status=status)

    def describe(self) -> str:
        if self.uri and self.uri.startswith(("http://", "https://")):
            return f"Compare runs: open {self.uri.rstrip('/')}/#/experiments/{self.experiment_id}/runs/{self.run_id}"
        return (
            f"Compare runs: `mlflow ui --backend-store-uri {self.uri}`, then open "
            f"http://127.0.0.1:5000/#/experiments/{self.experiment_id}/runs/{self.run_id}"
        )


@hookimpl
def register_trackers(register):
    register(TrackerSpec("mlflow", "MLflow: params, per-epoch metrics, held-out metric, artifacts", MlflowTracker))
