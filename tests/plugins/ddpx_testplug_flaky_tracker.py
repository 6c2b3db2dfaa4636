"""Test plugin: the ``flaky`` tracker records into MLflow like the built-in one, then fails from
the second epoch's metrics on, as a tracking server that went away mid-run would."""

from ddpx.api import TrackerSpec, hookimpl
from ddpx.plugins.trackers.mlflow import MlflowTracker


class FlakyTracker(MlflowTracker):
    def log_metrics(self, metrics, step=None):
        if step is not None and step >= 2:
            raise ConnectionError("the tracking server went away")
        super().log_metrics(metrics, step)


@hookimpl
def register_trackers(register):
    register(TrackerSpec("flaky", "MLflow until epoch 2, then nothing", FlakyTracker))
