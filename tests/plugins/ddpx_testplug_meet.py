"""Test plugin: rank 0 of each job checks in to the folder DDPX_TEST_MEET when its training starts
and waits (up to 60 s) until a second job has checked in too, then writes ``met`` or ``alone`` in
its own file there. Two jobs that ran at once both write ``met``; jobs run one after another
cannot (the first waits alone), however fast the machine makes each of them."""

import os
import time
from pathlib import Path

from ddpx import hookimpl

WAIT_S = 60


@hookimpl
def ddpx_fit_start(context):
    if context.rank != 0:
        return
    folder = Path(os.environ["DDPX_TEST_MEET"])
    mine = folder / f"{os.getpid()}.job"
    mine.write_text("waiting")
    deadline = time.monotonic() + WAIT_S
    while len(list(folder.glob("*.job"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    mine.write_text("met" if len(list(folder.glob("*.job"))) >= 2 else "alone")
