"""Fetching a dataset file once per machine: local rank 0 downloads, the other ranks wait."""

from __future__ import annotations

import os
import shutil
import urllib.request
from collections.abc import Callable
from pathlib import Path

from ddpx.api import UserError


def fetch(url: str, path: Path, timeout: float = 60) -> None:
    """Download ``url`` to ``path`` atomically (a partial download never takes its place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, tmp.open("wb") as out:
            shutil.copyfileobj(response, out)
        os.replace(tmp, path)
    except (OSError, ValueError) as exc:
        tmp.unlink(missing_ok=True)
        raise UserError(
            f"could not download {url} to {path}: {exc}. Check dataset.url, or download the file yourself and set dataset.path."
        ) from None


def ensure_file(
    path: Path, url: str, *, download: bool, is_local_main: bool, barrier: Callable[[], None], missing_hint: str
) -> None:
    """Make sure ``path`` exists; with ``download``, one process per machine fetches it."""
    if download:
        if is_local_main and not path.is_file():
            fetch(url, path)
        barrier()
    if not path.is_file():
        raise UserError(f"dataset file '{path}' does not exist. {missing_hint}")
