"""Test plugin: a task whose data building crashes on rank 1 with an internal error; a crash at
the end of an epoch; a tracker slow to log that epoch; one whose rank is killed while it logs one."""

import os
import signal
import time

from ddpx import hookimpl
from ddpx.api import TaskSpec, TrackerSpec
from ddpx.plugins.mlp_synthetic import DATASET_PARAMS, build_data
from ddpx.plugins.trackers.mlflow import MlflowTracker
from ddpx.plugins.trackers.mlflow.store_check import check_store, prepare_store


def build_failing(request):
    if request.rank == 1:
        raise RuntimeError(f"deliberate failure on rank {request.rank} (pid {os.getpid()})")
    return build_data(request)


@hookimpl
def register_tasks(register):
    register(
        TaskSpec(
            "failing_on_rank1",
            "crashes on rank 1",
            build_failing,
            loss="cross_entropy",
            metric="accuracy",
            params=DATASET_PARAMS,
        )
    )


@hookimpl
def ddpx_epoch_end(context, epoch, metrics):
    """With DDPX_TEST_FAIL_AT_EPOCH=N, rank 1 crashes at the end of epoch N (mid-training); with
    DDPX_TEST_FAIL_ONCE=FILE, rank 1 of the first run to end an epoch crashes, once: it leaves FILE."""
    if context.rank == 1 and str(epoch) == os.environ.get("DDPX_TEST_FAIL_AT_EPOCH"):
        raise RuntimeError(f"deliberate crash on rank 1 after epoch {epoch}")
    once = os.environ.get("DDPX_TEST_FAIL_ONCE")
    if context.rank == 1 and once and not os.path.exists(once):
        open(once, "w").close()
        raise RuntimeError(f"deliberate crash on rank 1 after epoch {epoch}, once")


class SlowAtFailingEpoch(MlflowTracker):
    """MLflow, taking its time over the epoch at which rank 1 crashes: the launcher's stop reaches
    rank 0 while it records that epoch."""

    def log_metrics(self, metrics, step=None):
        if str(step) == os.environ.get("DDPX_TEST_FAIL_AT_EPOCH"):
            time.sleep(2.0)
        super().log_metrics(metrics, step)


class KilledWhileLogging(MlflowTracker):
    """MLflow, whose rank 0 is killed as it starts to log epoch DDPX_TEST_KILL_AT_EPOCH (the
    launching process, closing the run, logs it)."""

    def log_metrics(self, metrics, step=None):
        if str(step) == os.environ.get("DDPX_TEST_KILL_AT_EPOCH") and os.environ.get("RANK") == "0":
            os.kill(os.getpid(), signal.SIGKILL)
        super().log_metrics(metrics, step)


@hookimpl
def register_trackers(register):
    register(
        TrackerSpec(
            "mlflow_slow",
            "MLflow, slow to log the failing epoch",
            SlowAtFailingEpoch,
            check_store,
            prepare_store,
            imports=("mlflow",),
        )
    )
    register(
        TrackerSpec(
            "mlflow_killed",
            "MLflow, its rank killed while logging an epoch",
            KilledWhileLogging,
            check_store,
            prepare_store,
            imports=("mlflow",),
        )
    )
