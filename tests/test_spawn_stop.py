"""The spawn launcher stops the other ranks when one fails: a rank that ends on its own between
the launcher's look and its signal (the fork server, its parent, reaps it at once) is not an
error of the job's."""

import signal
from pathlib import Path

from ddpx.plugins.launchers.spawn import stop_ranks


class RankThatEndsMeanwhile:
    """A rank alive when the launcher looks, gone by the time the signal is sent."""

    def __init__(self) -> None:
        pid_max = Path("/proc/sys/kernel/pid_max")
        self.pid = (int(pid_max.read_text()) if pid_max.is_file() else 4194304) + 1  # no process has it
        self.looks, self.joined, self.killed = 0, 0, 0

    def is_alive(self) -> bool:
        self.looks += 1
        return self.looks == 1

    def join(self, timeout=None) -> None:
        self.joined += 1

    def kill(self) -> None:
        self.killed += 1


def test_a_rank_that_ended_before_its_signal_is_simply_joined():
    rank = RankThatEndsMeanwhile()
    stop_ranks([rank], signal.SIGTERM, grace_s=0.1)  # raised ProcessLookupError before: a traceback for the user
    assert rank.looks == 2 and rank.joined == 1 and rank.killed == 0
