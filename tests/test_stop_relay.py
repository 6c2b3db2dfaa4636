"""A stop request (SIGUSR1) to the ddpx process reaches ranks that start after it: a run starting as
the request came (in a sweep or study, or a job still launching) stops too; a rank hears it only once
its handler is in place, never as the signal's default action (``launch/signals.py``)."""

import os
import signal
import subprocess
import sys
import threading

from ddpx.launch.signals import signals_reach_the_ranks, stop_requested

# stands as a rank does (its command names the rank's module), and as a torchrun worker still importing: for
# its first second it has no handler for SIGUSR1, whose default action would end it; then its handler writes
# the file named first and exits 0
A_RANK = """
import signal, sys, time
time.sleep(1.5)
signal.signal(signal.SIGUSR1, lambda *_: (open(sys.argv[1], "w").write("heard"), sys.exit(0)))
print("listening", flush=True)
time.sleep(60)
"""


def test_a_stop_request_reaches_a_rank_that_starts_after_it_once_it_listens(tmp_path):
    assert threading.current_thread() is threading.main_thread()  # where the handlers are installed
    heard, before = tmp_path / "heard", signal.getsignal(signal.SIGUSR1)
    with signals_reach_the_ranks():
        os.kill(os.getpid(), signal.SIGUSR1)  # no rank yet
        assert stop_requested()
        rank = subprocess.Popen([sys.executable, "-c", A_RANK, str(heard), "ddpx.rank.worker"], stdout=subprocess.PIPE)
        try:
            assert rank.wait(timeout=20) == 0  # not ended by the signal's default action (-10) while it started
        finally:
            rank.kill()
        assert rank.stdout.read() == b"listening\n"
    assert heard.read_text() == "heard" and signal.getsignal(signal.SIGUSR1) == before
    assert stop_requested()  # until the next command's outermost block begins
    with signals_reach_the_ranks():
        assert not stop_requested()
