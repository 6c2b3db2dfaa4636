"""Two ways of running jobs in one process, compared: each side a fresh process of the benchmark
script (``--one SIDE``), the sides interleaved, the answers read from each process's last line."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def interleaved(script: str, sides: list[str], repeats: int, args: list[str]) -> dict[str, list]:
    """``{side: [answer of each repeat]}``: ``script --one SIDE *args``, the JSON its last line prints."""
    runs: dict[str, list] = {side: [] for side in sides}
    for _ in range(repeats):
        for side in sides:
            command = [sys.executable, script, "--one", side, *args]
            done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
            runs[side].append(json.loads(done.stdout.splitlines()[-1]))
    return runs


def machine_line(repeats: int, what: str) -> str:
    return (
        f"{date.today()}: {platform.machine()}, {len(os.sched_getaffinity(0))} cores, "
        f"{repeats} repeats interleaved, medians; {what}"
    )
