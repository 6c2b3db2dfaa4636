"""Running a launcher's supervising command (torchrun, srun) so that Ctrl-C or a SIGTERM to the
``ddpx`` process stops it and the ranks under it, instead of leaving them running."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Sequence
from typing import IO

INTERRUPTED = 130


def run_supervised(
    command: Sequence[str], *, stderr: IO[str] | None = None, stop_signal: int = signal.SIGINT, grace_s: float = 30.0
) -> int:
    """Run ``command`` and return its exit status; if this process is interrupted (Ctrl-C, or
    SIGTERM while a job runs), send ``stop_signal`` to the command, give it ``grace_s`` to stop
    its ranks, kill it after that, and return 130."""
    process = subprocess.Popen(list(command), stderr=stderr)
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.send_signal(stop_signal)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        return INTERRUPTED
