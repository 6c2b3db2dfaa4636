"""Writing into the run folder atomically: a temporary file beside the target, then a rename, so
a crash or a signal mid-write never leaves a torn file. A full disk is a clear error naming the
disk and the folder, and the partial file is removed (what was there before stays whole).

:func:`disk_full_error` finds a full disk (or an exceeded quota) behind any failure — torch, for
one, reports a failed write as a ``RuntimeError`` whose context is the ``OSError`` — and turns
it into that one paragraph; the ranks and the launching process use it for every write.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ddpx.contract.errors import UserError

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
SQLITE_FULL = 13  # sqlite3's "database or disk is full"
RESUME_FIX = (
    "Free space there, or give --run-dir a folder on a larger disk, and continue with `--resume auto` (the "
    "last checkpoint written is intact)."
)


def disk_full_cause(exc: BaseException | None) -> BaseException | None:
    """The full-disk error behind ``exc`` (itself, its cause or its context), if any: an ``OSError``
    of errno ENOSPC or EDQUOT, or sqlite's SQLITE_FULL."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and not isinstance(exc, UserError):
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in DISK_FULL:
            return exc
        if getattr(exc, "sqlite_errorcode", None) == SQLITE_FULL:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _mount_point(path: Path) -> Path:
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def disk_full_message(folder: Path, what: str, fix: str = "Free space there.") -> str:
    """One paragraph: the folder, its disk (mount point and free space), what did not fit, the fix."""
    folder = Path(os.path.abspath(folder))
    mount = _mount_point(folder)
    try:
        usage = shutil.disk_usage(mount)
        free = f"{usage.total // 1024} KiB, {usage.free // 1024} KiB free now"
    except OSError:
        free = "its free space unknown"
    return (
        f"no space left on the device holding {folder} (the disk mounted at {mount}: {free}): {what} could not "
        f"be written. {fix}"
    )


def disk_full_error(
    exc: BaseException, folder: Path | None, what: str = "a file", fix: str = "Free space there."
) -> UserError | None:
    """``exc`` as the paragraph of :func:`disk_full_message` when a full disk caused it, else None;
    the folder is the failed file's own when the error names it, else ``folder`` (None: not known)."""
    cause = disk_full_cause(exc)
    if cause is None:
        return None
    if getattr(cause, "filename", None):
        failed = Path(os.fsdecode(cause.filename))
        folder, what = failed.parent, f"{what} ({failed.name})"
    if folder is None:
        return UserError(
            f"no space left on a disk this command writes to ({cause}): {what} could not be written. "
            "Free space on the disk of the run folders (--run-dir, default ./ddpx-runs) or of the "
            "tracking store (--tracking-uri), and run the command again."
        )
    return UserError(disk_full_message(folder, what, fix))


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
