"""The MLflow tracker against a real sqlite store, in this process: a resumed run sheds the error
of the attempt that failed, and a finished run refreshes the experiment's saved view."""

from __future__ import annotations

import json

from mlflow.tracking import MlflowClient

from ddpx.contract.job import Job
from ddpx.contract.launch_settings import LaunchSettings
from ddpx.plugins.trackers.mlflow import MlflowTracker
from ddpx.plugins.trackers.mlflow.views import VIEW_TAG

TAGS = {"ddpx.recipe": "tiny", "ddpx.metric": "heldout_accuracy", "ddpx.metric_direction": "max"}


def _tracker(uri: str) -> MlflowTracker:
    job = Job(
        recipe_name="tiny",
        recipe_source="",
        config={},
        launch=LaunchSettings(tracking_uri=uri, experiment="tiny", system_metrics=False),
    )
    return MlflowTracker(job)


def test_a_resumed_run_drops_the_failed_attempts_error_and_the_view_lists_it_best_first(tmp_path, new_store):
    uri = new_store
    runs = []
    for lr, accuracy in (("0.1", 0.8), ("0.3", 0.9)):
        tracker = _tracker(uri)
        tracker.start(run_name=f"lr {lr}", params={"train.lr": lr, "train.seed": 0}, tags=TAGS)
        tracker.log_metrics({"heldout_accuracy": accuracy})
        runs.append(tracker)
    runs[0].finish("FINISHED")
    runs[1].finish("FAILED", error="rank 1 was killed by SIGKILL")
    client = MlflowClient(uri)
    assert client.get_run(runs[1].run_id).data.tags["ddpx.error"] == "rank 1 was killed by SIGKILL"

    again = _tracker(uri)
    again.start(run_name="", params={}, tags=TAGS, resume_run_id=runs[1].run_id)
    again.finish("FINISHED")
    resumed = client.get_run(runs[1].run_id)
    assert resumed.info.status == "FINISHED" and "ddpx.error" not in resumed.data.tags

    envelope = json.loads(client.get_experiment(again.experiment_id).tags[VIEW_TAG])
    state = json.loads(envelope["state"])
    assert envelope["name"] == "ddpx: best held-out first"
    assert state["orderByKey"] == "metrics.`heldout_accuracy`" and state["orderByAsc"] is False
    assert state["selectedColumns"][:2] == ["metrics.`heldout_accuracy`", "params.`train.lr`"]  # the seed is the same
