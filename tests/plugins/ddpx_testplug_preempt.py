"""Test plugin (fault injection): one rank sends itself a signal at its Nth training step.

DDPX_TEST_SIGNAL_AT="RANK:STEP:SIGNAL" (SIGNAL: USR1 to ask for a checkpoint-and-stop, KILL to
crash the rank). It fires once per run folder, so a resumed or restarted run is not hit again.
"""

import os
import signal

from ddpx import hookimpl


@hookimpl
def ddpx_fit_start(context):
    rank, step, name = os.environ["DDPX_TEST_SIGNAL_AT"].split(":")
    marker = context.run_dir / f"signal-{name}-sent"
    if context.rank != int(rank) or marker.exists():
        return
    calls = {"n": 0}

    def count(module, inputs):
        if module.training:
            calls["n"] += 1
            if calls["n"] == int(step):
                marker.touch()
                os.kill(os.getpid(), getattr(signal, f"SIG{name}"))

    context.model.register_forward_pre_hook(count)
