"""Test plugin (fault injection): rank 1 hangs forever once training starts."""

import time

from ddpx import hookimpl


@hookimpl
def ddpx_fit_start(context):
    if context.rank == 1:
        while True:
            time.sleep(1)
