"""The ``mlflow`` tracker: one MLflow run per job, written by rank 0; ``ddpx runs`` to read them
back (:mod:`.runs_command`), and ``ddpx predict`` for an MLflow run id or model URI (:mod:`.predict`).

The store is ``--tracking-uri``, else ``MLFLOW_TRACKING_URI``, else MLflow's own default
(``sqlite:///mlflow.db`` in the working directory). mlflow is imported only when a run starts.

Besides params, metrics and artifacts, the run gets the dataset as an MLflow input (name,
source, digest, and the split sizes as its profile) and, unless ``--no-system-metrics``, MLflow's
own system metrics (CPU, memory, disk, network, and GPU where present) sampled on rank 0.
``MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL`` sets their period in seconds (default 10); the run's
last reading is logged when it ends, so a run shorter than one period has one too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ddpx.api import DatasetRecord, Job, TrackerSpec, hookimpl
from ddpx.plugins.trackers.mlflow.ui_links import LOCAL_UI, best_first_link, ui_link

MAX_PARAM_LENGTH = 6000
SYSTEM_METRICS_INTERVAL_S = 10
KIND_TAG = "mlflow.experimentKind"  # what MLflow 3's UI reads to choose an experiment's view
EXPERIMENT_KIND = "custom_model_development"  # the model-training view (not GenAI's traces and judges)


def _source_type(source: str) -> str:
    if source.startswith(("http://", "https://")):
        return "http"
    return "local" if source.startswith("/") else "code"


class MlflowTracker:
    def __init__(self, job: Job):
        self.uri = job.launch.tracking_uri
        self.experiment = job.launch.experiment
        self.run_id: str | None = None
        self.experiment_id: str | None = None
        self.model_id: str | None = None  # the logged model, once the best model is logged
        self.system_metrics = job.launch.system_metrics
        self.metric: str | None = None  # the held-out metric that judges the run (the ddpx.metric tag)
        self.higher_is_better = True
        self._client: Any = None
        self._monitor: Any = None

    def start(
        self, *, run_name: str, params: Mapping[str, Any], tags: Mapping[str, str], resume_run_id: str | None = None
    ) -> None:
        import logging

        import mlflow
        from mlflow.entities import Param
        from mlflow.tracking import MlflowClient

        from ddpx.plugins.trackers.mlflow.store import bound_http_retries, check_server, is_http, resolve_uri

        logging.getLogger("mlflow").setLevel(logging.WARNING)  # no schema-migration chatter
        # a failed statement is logged there with its traceback, then raised: ddpx reports it once, in a line
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
        self.metric, self.higher_is_better = tags.get("ddpx.metric"), tags.get("ddpx.metric_direction") != "min"
        self.uri = resolve_uri(self.uri)
        if is_http(self.uri):
            bound_http_retries()
            check_server(self.uri)
        mlflow.set_tracking_uri(self.uri)
        self._client = MlflowClient(self.uri)
        if resume_run_id:  # a resumed job continues its own run
            run = self._client.get_run(resume_run_id)
            self.run_id, self.experiment_id = run.info.run_id, run.info.experiment_id
            self._client.update_run(self.run_id, status="RUNNING")
            if "ddpx.error" in run.data.tags:  # the error of an earlier attempt no longer describes the run
                self._client.delete_tag(self.run_id, "ddpx.error")
            self._start_system_metrics(resume=True)
            return
        self.experiment_id = self._experiment_id()
        run = self._client.create_run(self.experiment_id, run_name=run_name, tags=dict(tags))
        self.run_id = run.info.run_id
        items = [Param(key, str(value)[:MAX_PARAM_LENGTH]) for key, value in sorted(params.items())]
        for start in range(0, len(items), 100):  # MLflow takes at most 100 params per batch
            self._client.log_batch(self.run_id, params=items[start : start + 100])
        self._start_system_metrics(resume=False)

    def _experiment_id(self) -> str:
        """The experiment's id, creating the experiment if it does not exist yet, marked as model
        development (:data:`EXPERIMENT_KIND`) so the MLflow UI opens it in its model-training
        view; an existing experiment of no kind is marked too. Jobs started at the same moment (a
        Slurm array, two terminals) may all find it missing: the one whose create comes second
        reads back the experiment the first one made."""
        from mlflow.exceptions import MlflowException

        experiment = self._client.get_experiment_by_name(self.experiment)
        if experiment is None:
            try:
                return self._client.create_experiment(self.experiment, tags={KIND_TAG: EXPERIMENT_KIND})
            except MlflowException as exc:
                if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                    raise
            experiment = self._client.get_experiment_by_name(self.experiment)
        if not experiment.tags.get(KIND_TAG):
            self._client.set_experiment_tag(experiment.experiment_id, KIND_TAG, EXPERIMENT_KIND)
        return experiment.experiment_id

    def _start_system_metrics(self, resume: bool) -> None:
        if not self.system_metrics:
            return
        from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

        self._monitor = SystemMetricsMonitor(
            self.run_id, sampling_interval=SYSTEM_METRICS_INTERVAL_S, resume_logging=resume, tracking_uri=self.uri
        )
        self._monitor.start()

    def _stop_system_metrics(self) -> None:
        if self._monitor is not None:
            self._monitor.finish()
            self._log_last_reading(self._monitor)
            self._monitor = None

    @staticmethod
    def _log_last_reading(monitor: Any) -> None:
        """MLflow's monitor drops the readings of the period a run ends in; take one more and log
        them, so every run has system metrics, however short."""
        monitor.collect_metrics()
        monitor.publish_metrics(monitor.aggregate_metrics())
        monitor.mlflow_logger.flush()

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(key, float(value), now, step or 0) for key, value in metrics.items()]
        self._client.log_batch(self.run_id, metrics=batch)

    def log_artifact(self, path: Path, folder: str | None = None) -> None:
        self._client.log_artifact(self.run_id, str(path), artifact_path=folder)

    def log_dataset(self, dataset: DatasetRecord) -> None:
        import json

        from mlflow.entities import Dataset, DatasetInput, InputTag

        record = Dataset(
            name=dataset.name,
            digest=dataset.digest,
            source_type=_source_type(dataset.source),
            source=json.dumps({"uri": dataset.source}),
            profile=json.dumps(dict(dataset.splits)),
        )
        self._client.log_inputs(self.run_id, [DatasetInput(record, [InputTag("mlflow.data.context", "training")])])

    def log_model(self, folder: Path, register: str | None = None) -> None:
        """The best model as an MLflow logged model of this run (see :mod:`.pyfunc_model`)."""
        from ddpx.plugins.trackers.mlflow.pyfunc_model import log_best_model

        self.model_id = log_best_model(folder, self.run_id, register)

    def set_tags(self, tags) -> None:
        for key, value in tags.items():
            self._client.set_tag(self.run_id, key, value)

    def note(self, text: str) -> None:
        """The run's description in the UI (the ``mlflow.note.content`` tag), above its details."""
        self._client.set_tag(self.run_id, "mlflow.note.content", text)

    def finish(self, status: str, error: str | None = None) -> None:
        self._stop_system_metrics()
        if error:
            self._client.set_tag(self.run_id, "ddpx.error", error[:5000])
        self._client.set_terminated(self.run_id, status=status)
        if status == "FINISHED" and self.metric:
            from ddpx.plugins.trackers.mlflow.views import refresh_view

            refresh_view(self._client, self.experiment_id, self.metric, self.higher_is_better)

    def describe(self) -> str:
        """Where to see the run: its page in the UI's model-training view (``ui_link``), and the
        experiment's runs list in ddpx's saved view (best first)."""
        page = ui_link(f"experiments/{self.experiment_id}/runs/{self.run_id}")
        runs = best_first_link(self.experiment_id)
        if self.uri and self.uri.startswith(("http://", "https://")):
            base, how = self.uri.rstrip("/"), "The run in MLflow: open"
        else:
            base, how = LOCAL_UI, f"The run in MLflow: `mlflow ui --backend-store-uri {self.uri}`, then open"
        return f"{how} {base}/{page}\nEvery run of {self.experiment}, best first: {base}/{runs}"


@hookimpl
def register_trackers(register):
    from ddpx.plugins.trackers.mlflow.store_check import check_store, prepare_store, store_imports

    register(
        TrackerSpec(
            "mlflow",
            "MLflow: params, per-epoch metrics, held-out metric, artifacts",
            MlflowTracker,
            check_store,
            prepare_store,
            imports=("mlflow",),
            imports_for=store_imports,
        )
    )


@hookimpl
def register_commands(register):
    from ddpx.plugins.trackers.mlflow.runs_command import runs_command

    register(runs_command)


@hookimpl(trylast=True)
def ddpx_load_predictor(model: str, tracking_uri: str | None):
    """Any model reference no other plugin takes: an MLflow run id, ``runs:/``, ``models:/``, or
    another URI MLflow loads from (so a plugin's own kind of reference wins)."""
    from ddpx.plugins.trackers.mlflow.predict import from_mlflow

    return from_mlflow(model, tracking_uri)
