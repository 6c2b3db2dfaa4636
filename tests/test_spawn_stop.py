"""The spawn launcher stops the other ranks when one fails: a rank that ends on its own between
the launcher's look and its signal (the fork server, its parent, reaps it at once) is not an
error of the job's."""

import signal
from pathlib import Path

import pytest

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


# A rank's start made slow where a stop used to print a traceback: its arguments are unpickled in the
# new process before multiprocessing runs any rank code (a KeyboardInterrupt there ended the rank with
# "Process ddpx-rank-0: Traceback ..." on the user's screen). Both start methods the launcher uses: the
# fork server, and spawn (a new interpreter per rank, where TMPDIR is too long for the server's socket).
STOPPED_WHILE_STARTING = """
import multiprocessing, os, signal, sys, time
from ddpx.plugins.launchers.spawn import HOLD_CTRL_C, _rank_entry, start_ranks

class SlowToUnpickle:
    def __reduce__(self):  # in the new rank: says it is starting, takes five seconds, then None
        return (exec, ("import pathlib, time; pathlib.Path('starting').touch(); time.sleep(5.0)",))

if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    if sys.argv[1] == "forkserver":
        context.set_forkserver_preload([HOLD_CTRL_C, "ddpx.plugins.launchers.spawn"])
    rank = context.Process(target=_rank_entry, name="ddpx-rank-0", args=(0, SlowToUnpickle(), {}, 0, 1, None))
    start_ranks([rank], sys.argv[1])
    deadline = time.monotonic() + 60
    while not os.path.exists("starting"):
        if time.monotonic() > deadline or not rank.is_alive():
            sys.exit(f"the rank never began to unpickle its arguments (alive: {rank.is_alive()})")
        time.sleep(0.05)
    time.sleep(0.5)  # the rank is unpickling its arguments, for 4.5 s more
    os.kill(rank.pid, signal.SIGINT)  # as the launcher stops its ranks on Ctrl-C
    rank.join()
    print("exit", rank.exitcode)
"""


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_rank_stopped_while_it_starts_stops_cleanly(tmp_path, method):
    import subprocess
    import sys

    script = tmp_path / "stop_while_starting.py"
    script.write_text(STOPPED_WHILE_STARTING)
    done = subprocess.run(
        [sys.executable, str(script), method], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.stdout.strip() == "exit 130", done.stdout + done.stderr  # the stop's own status
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr
