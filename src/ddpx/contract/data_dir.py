"""Where datasets live: ``$DDPX_DATA_DIR``, else ``~/.cache/ddpx/data``."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "DDPX_DATA_DIR"


def data_root() -> Path:
    """The folder datasets are read from and downloaded to (not created here)."""
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ddpx" / "data"
