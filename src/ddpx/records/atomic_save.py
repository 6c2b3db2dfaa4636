"""Writing into the run folder atomically: a temporary file beside the target, then a rename, so
a crash or a signal mid-write never leaves a torn file. A full disk is a clear error naming the
disk and the folder (:mod:`ddpx.contract.disk_full`), and the partial file is removed (what was
there before stays whole).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ddpx.contract.disk_full import RESUME_FIX, disk_full_cause, disk_full_message
from ddpx.contract.errors import UserError


def save_atomically(obj: Any, path: Path, what: str) -> None:
    """``torch.save(obj)`` to ``path`` through a temporary file; ``what`` names it in errors."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:  # a Python file: a failed write raises OSError with its errno
            torch.save(obj, out)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if disk_full_cause(exc) is not None:
            raise UserError(disk_full_message(path.parent, what, RESUME_FIX)) from None
        raise


@contextmanager
def removed_if_failed(path: Path) -> Iterator[Path]:
    """Around a file written in place: if the write fails (a full disk), no partial file stays to
    fill the disk further, and an ``OSError`` names the file."""
    try:
        yield path
    except BaseException as exc:
        path.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            exc.filename = exc.filename or str(path)
        raise


def append_line(path: Path, line: str) -> None:
    """Append ``line`` whole, or nothing: a failed write is cut off again, so readers never meet half a line."""
    data = (line + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            os.ftruncate(fd, start)
            exc.filename = exc.filename or str(path)
            raise
    finally:
        os.close(fd)


def write_json_atomically(path: Path, record: Any) -> None:
    """``record`` as JSON in ``path``: a reader sees the old file or the new one, never a part."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        exc.filename = exc.filename or str(path)  # a failed write names no file: a full disk's error then says which
        raise
    finally:
        tmp.unlink(missing_ok=True)
