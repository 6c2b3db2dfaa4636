"""A full disk (or an exceeded quota) behind any failure, as one clear paragraph: the folder, its
disk (mount point and free space), what did not fit, the fix.

Torch, for one, reports a failed write as a ``RuntimeError`` whose context is the ``OSError``;
:func:`disk_full_error` finds the cause anyway. The launching process and the ranks use it for
every write (:mod:`ddpx.records.atomic_save` and the run folder's creation among them).
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

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
