"""Writing into the run folder atomically: a temporary file beside the target, then a rename, so
a crash or a signal mid-write never leaves a torn file. A full disk is a clear error naming the
folder, and the partial file is removed (what was there before stays whole)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

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
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise UserError(
                f"no space left on the device holding {path.parent} (writing {what}: {exc.strerror}). Free space "
                "there, or give --run-dir a folder on a larger disk, and continue with `--resume auto` (an earlier "
                "checkpoint is intact)."
            ) from None
        raise


def write_json_atomically(path: Path, record: Any) -> None:
    """``record`` as JSON in ``path``: a reader sees the old file or the new one, never a part."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
