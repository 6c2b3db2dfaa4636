"""What a launcher puts in the environment of the ranks it starts: each rank's share of the cores
and idle threads that sleep, unless the user exported either (the running job's own view, through
torch's OpenMP library, is checked in test_training_e2e)."""

import os

import pytest

from ddpx.api import cpu_share, idle_threads_sleep, threads_per_rank


def test_ranks_get_their_share_and_sleeping_idle_threads_and_the_environment_is_restored(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with threads_per_rank(2):
        assert os.environ["OMP_NUM_THREADS"] == str(cpu_share(2)) and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    with idle_threads_sleep():  # torchrun sizes the threads itself
        assert "OMP_NUM_THREADS" not in os.environ and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_NUM_THREADS" not in os.environ and "OMP_WAIT_POLICY" not in os.environ
    with pytest.raises(KeyboardInterrupt), threads_per_rank(2):  # a stop while the ranks start
        raise KeyboardInterrupt
    assert "OMP_NUM_THREADS" not in os.environ and "OMP_WAIT_POLICY" not in os.environ


def test_what_the_user_exported_wins_and_stays(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with threads_per_rank(1):
        assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE" and os.environ["OMP_NUM_THREADS"] == str(cpu_share(1))
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE" and "OMP_NUM_THREADS" not in os.environ
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    with threads_per_rank(2), idle_threads_sleep():
        assert os.environ["OMP_NUM_THREADS"] == "3" and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
    assert os.environ["OMP_NUM_THREADS"] == "3"
