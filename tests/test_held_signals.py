"""``signals_held``: a Ctrl-C or SIGTERM that lands while a launcher starts its ranks arrives once they
have all started (or starting them failed), to the handlers that were there before; a second one at once."""

from __future__ import annotations

import os
import signal

import pytest

from ddpx.api import signals_held


@pytest.fixture(autouse=True)
def ctrl_c_raises():
    """Ctrl-C as a terminal's ddpx has it (a pytest-xdist worker ignores SIGINT), put back after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_inside_the_block_is_raised_at_its_end_not_before():
    reached = []
    with pytest.raises(KeyboardInterrupt), signals_held():
        os.kill(os.getpid(), signal.SIGINT)
        reached.append("after the signal")  # the block goes on: every process gets started
    assert reached == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_held_ctrl_c_wins_over_an_error_of_the_block():
    """A Ctrl-C that kills the fork server while it starts makes ``start()`` fail: the stop is not lost."""
    with pytest.raises(KeyboardInterrupt) as raised, signals_held():
        os.kill(os.getpid(), signal.SIGINT)
        raise EOFError("the fork server went away")
    assert isinstance(raised.value.__context__, EOFError)


def test_a_second_ctrl_c_is_obeyed_at_once():
    reached = []
    with pytest.raises(KeyboardInterrupt), signals_held():
        os.kill(os.getpid(), signal.SIGINT)
        reached.append("held")
        os.kill(os.getpid(), signal.SIGINT)
        reached.append("not reached")
    assert reached == ["held"] and signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_sigterm_goes_to_the_handler_that_was_there_before():
    came = []
    before = signal.signal(signal.SIGTERM, lambda signum, frame: came.append(signum))
    try:
        with signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            assert came == []
        assert came == [signal.SIGTERM]
        with signals_held():  # no signal: nothing is raised, the handler is back
            pass
        assert came == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_rank_stopped_while_it_waits_for_its_port_exits_130_without_a_traceback(tmp_path):
    """The spawn launcher's rank entry: a Ctrl-C (the launcher stops its ranks with SIGINT) before the
    rank's job has begun, here while rank 1 waits for rank 0's port, ends the rank as a stop, quietly."""
    import multiprocessing
    import time

    from ddpx.plugins.launchers.spawn import _rank_entry

    context = multiprocessing.get_context("fork")
    stderr = (tmp_path / "stderr").open("w")
    saved = os.dup(2)
    os.dup2(stderr.fileno(), 2)  # the forked rank's stderr
    try:
        env = {"MASTER_ADDR": "127.0.0.1", "WORLD_SIZE": "2", "PATH": os.environ.get("PATH", "")}
        rank = context.Process(target=_rank_entry, args=(1, "never read", env, 0, 2, context.Queue()))
        rank.start()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    time.sleep(1.0)  # rank 1 waits on the queue for a port nobody sends
    os.kill(rank.pid, signal.SIGINT)
    rank.join(30)
    stderr.close()
    said = (tmp_path / "stderr").read_text()
    assert rank.exitcode == 130 and "Traceback" not in said and "KeyboardInterrupt" not in said, said
