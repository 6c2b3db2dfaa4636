"""``benchmarks/vs_chemprop/lockstep.py``: two processes take turns epoch by epoch (``run.py --lockstep``).

The turns are real named pipes between real processes: two Python processes that note when each of
their "epochs" ran, and a real one-rank ddpx job (the plugin loaded through ``DDPX_PLUGINS``) taking
turns with this test's process, which checks on each of its turns that the job is blocked."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent  # on sys.path: `benchmarks` importable
sys.path.insert(0, str(ROOT))

from benchmarks.vs_chemprop.lockstep import LOCKSTEP_ENV, Turns, make_pipes  # noqa: E402

TAKER = """
import json, sys, time
sys.path.insert(0, {root!r})
from benchmarks.vs_chemprop.lockstep import turns_from_env
turns, spans = turns_from_env(), []
time.sleep({delay})  # setting up: the first must not start before the second is ready
turns.start()
for _ in range(3):
    began = time.time()
    time.sleep(0.15)  # an epoch
    spans.append((began, time.time()))
    turns.give()
turns.finish()
print(json.dumps(spans))
"""


def start_taker(pipes, name, other, role, delay):
    env = {**os.environ, LOCKSTEP_ENV: f"{pipes[name]}:{pipes[other]}:{role}"}
    code = TAKER.format(root=str(ROOT), delay=delay)
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)


def test_two_processes_train_their_epochs_in_turn_never_together(tmp_path):
    pipes = make_pipes(str(tmp_path), ["a", "b"])
    first = start_taker(pipes, "a", "b", "first", delay=0.0)
    second = start_taker(pipes, "b", "a", "second", delay=0.5)
    spans_a, spans_b = (json.loads(p.communicate(timeout=60)[0]) for p in (first, second))
    assert first.returncode == second.returncode == 0
    windows = sorted([(*s, "a") for s in spans_a] + [(*s, "b") for s in spans_b])
    assert [w[2] for w in windows] == ["a", "b"] * 3  # the first began, then turn about
    for earlier, later in zip(windows, windows[1:]):
        assert earlier[1] <= later[0]  # no two epochs overlap


def test_the_first_waits_until_the_second_is_ready(tmp_path):
    pipes = make_pipes(str(tmp_path), ["a", "b"])
    started = time.time()
    first = start_taker(pipes, "a", "b", "first", delay=0.0)
    second = start_taker(pipes, "b", "a", "second", delay=1.5)
    spans_a = json.loads(first.communicate(timeout=60)[0])
    second.communicate(timeout=60)
    assert spans_a[0][0] - started >= 1.5  # not before the second said it was ready


@pytest.mark.slow  # starts a rank
def test_a_one_rank_ddpx_job_is_blocked_while_the_other_process_has_its_turn(tmp_path):
    pipes = make_pipes(str(tmp_path), ["ddpx", "test"])
    env = {
        **os.environ,
        LOCKSTEP_ENV: f"{pipes['ddpx']}:{pipes['test']}:first",
        "DDPX_PLUGINS": "benchmarks.vs_chemprop.lockstep",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    job = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ddpx",
            "recipe",
            "mlp_synthetic",
            "--tracking",
            "none",
            "--nproc",
            "1",
            "train.max_epochs=3",
            "train.patience=0",
            "dataset.train_size=2000",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    turns = Turns(pipes["test"], pipes["ddpx"], first=False)
    seen = []
    turns.start()  # the job's first epoch ran meanwhile
    while not turns.other_done:
        (metrics,) = tmp_path.glob("ddpx-runs/*/metrics.jsonl")
        epochs = [json.loads(line)["epoch"] for line in metrics.read_text().splitlines() if '"epoch_s"' in line]
        time.sleep(0.3)  # the job stays blocked through this process's turn
        assert [json.loads(line)["epoch"] for line in metrics.read_text().splitlines() if '"epoch_s"' in line] == epochs
        seen.append(epochs)
        turns.give()
    out = job.communicate(timeout=300)[0]
    assert job.returncode == 0, out
    assert seen == [[1], [1, 2], [1, 2, 3]]  # one epoch of the job between two turns of this process
