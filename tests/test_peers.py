"""``benchmarks/peers/run.py --dry``: ddpx, Lightning's Trainer, Accelerate and the plain DDP loop each
train the same tiny work on 2 real ranks and report a full row, so the side-by-side script keeps
working between measurements."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts ranks

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "peers" / "run.py"


def test_the_dry_run_trains_every_peer_on_two_ranks_and_reports_each():
    pytest.importorskip("lightning", reason="the bench extra (pip install -e '.[bench]')")
    pytest.importorskip("accelerate", reason="the bench extra (pip install -e '.[bench]')")
    done = subprocess.run([sys.executable, str(SCRIPT), "--dry"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [cells[0].lstrip("| ") for cells in rows] == [
        "plain PyTorch DDP loop",
        "ddpx `mlp_synthetic`",
        "Lightning Trainer, DDP",
        "Accelerate",
    ]
    for cells in rows:
        first_step, train_s, _, epoch_s, peak, heldout = (c.strip(" |") for c in cells[1:])
        assert 0 < float(first_step) < 120 and 0 < float(train_s) <= float(epoch_s)
        assert float(peak.replace(",", "")) > 50  # MB: a process holding torch
        assert 0.2 < float(heldout) <= 1.0, cells  # every peer learns (chance: 1 in 32)
