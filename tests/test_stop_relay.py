"""A stop request (SIGUSR1) to the ddpx process reaches ranks that start after it: a run starting as
the request came (in a sweep or study, or a job still launching) stops too (``launch/signals.py``)."""

import os
import signal
import subprocess
import sys
import threading

from ddpx.launch.signals import forget_stop_requests, signals_reach_the_ranks, stop_requested

# stands as a rank does (its command names the rank's module): SIGUSR1 held until its handler is in place, as
# the spawn launcher's fork server holds it for a rank; the handler writes the file named first, then exits
A_RANK = """
import signal, sys, time
signal.signal(signal.SIGUSR1, lambda *_: (open(sys.argv[1], "w").write("heard"), sys.exit(0)))
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
print("listening", flush=True)
time.sleep(60)
"""


def test_a_stop_request_reaches_a_rank_that_starts_after_it_and_is_forgotten_by_the_next_sweep(tmp_path):
    assert threading.current_thread() is threading.main_thread()  # where the handlers are installed
    heard, before = tmp_path / "heard", signal.getsignal(signal.SIGUSR1)
    forget_stop_requests()
    with signals_reach_the_ranks():
        os.kill(os.getpid(), signal.SIGUSR1)  # no rank yet
        assert stop_requested()
        rank = subprocess.Popen(
            [sys.executable, "-c", A_RANK, str(heard), "ddpx.rank.worker"],
            stdout=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1}),
        )
        try:
            assert rank.stdout.readline() == "listening\n"
            assert rank.wait(timeout=20) == 0  # it heard the request, relayed after it started
        finally:
            rank.kill()
    assert heard.read_text() == "heard" and signal.getsignal(signal.SIGUSR1) == before
    assert stop_requested()  # until the next sweep or study begins
    forget_stop_requests()
    assert not stop_requested()
