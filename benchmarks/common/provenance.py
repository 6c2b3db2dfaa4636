"""What a table says about the code it measured: the commit."""

from __future__ import annotations

import subprocess
from pathlib import Path


def commit() -> str:
    """The short hash of the checked-out commit, ``+changes`` when tracked files differ from it."""
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True
        ).stdout.strip()
        return sha + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
