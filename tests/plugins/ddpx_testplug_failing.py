"""Test plugin: a task whose data building crashes on rank 1 with an internal error."""

import os

from ddpx import hookimpl
from ddpx.api import TaskSpec
from ddpx.plugins.mlp_synthetic import DATASET_PARAMS, build_data


def build_failing(request):
    if request.rank == 1:
        raise RuntimeError(f"deliberate failure on rank {request.rank} (pid {os.getpid()})")
    return build_data(request)


@hookimpl
def register_tasks(register):
    register(TaskSpec("failing_on_rank1", "crashes on rank 1", build_failing, loss="cross_entropy",
                      metric="accuracy", params=DATASET_PARAMS))


@hookimpl
def ddpx_epoch_end(context, epoch, metrics):
    """With DDPX_TEST_FAIL_AT_EPOCH=N, rank 1 crashes at the end of epoch N (mid-training)."""
    if context.rank == 1 and str(epoch) == os.environ.get("DDPX_TEST_FAIL_AT_EPOCH"):
        raise RuntimeError(f"deliberate crash on rank 1 after epoch {epoch}")
