"""The launch-cost benchmark's probe, a ddpx plugin (``DDPX_PLUGINS=benchmarks.launch_cost.probe``):
rank 0 writes the wall-clock time at which training is about to take its first step
(``ddpx_fit_start``) to ``$DDPX_BENCH_STAMP``."""

import os
import time

from ddpx import hookimpl


@hookimpl
def ddpx_fit_start(context):
    path = os.environ.get("DDPX_BENCH_STAMP")
    if path and context.rank == 0:
        with open(path, "w") as fh:
            fh.write(repr(time.time()))
