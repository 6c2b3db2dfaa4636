"""Test plugin (fault injection): rank 0 pauses after epoch DDPX_TEST_PAUSE_AFTER until the file
DDPX_TEST_GO_ON exists, so a test can change the world (stop a server, say) at a known point."""

import os
import time
from pathlib import Path

from ddpx import hookimpl


@hookimpl
def ddpx_epoch_end(context, epoch, metrics):
    if context.rank == 0 and epoch == int(os.environ["DDPX_TEST_PAUSE_AFTER"]):
        print(f"paused after epoch {epoch} of {context.world_size} rank(s)", flush=True)
        go_on, deadline = Path(os.environ["DDPX_TEST_GO_ON"]), time.monotonic() + 120
        while not go_on.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
