"""Before launch: can the MLflow store record this run? Checked in the launching process without
importing mlflow, so a wrong URI is exit 2 in a second, never a run that "finished" unrecorded.

- mlflow must be installed (a bare machine, a GPU lent for an hour, may lack it);
- a scheme MLflow does not store runs in (``sqlit://``, ``ftp://``) is an error naming the ones it does;
- an sqlite file must be creatable or writable: its folder exists and can be written;
- a file store's folder (``file:///...`` or a plain path) must be creatable;
- either must be on a disk with 1 MiB free at least;
- a server must answer ``/health`` within a few seconds.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from urllib.parse import urlsplit

from ddpx.api import Job, UserError
from ddpx.plugins.trackers.mlflow.store import StoreUnreachable, check_server

SCHEMES = ("sqlite", "file", "http", "https", "postgresql", "mysql", "mssql", "databricks", "databricks-uc")
DEFAULT_URI = "sqlite:///mlflow.db"  # MLflow's own default, in the working directory
MIN_FREE_BYTES = 1 << 20  # less, and a run's first records may not fit


def store_uri(job: Job) -> str:
    """The store the job records to, as MLflow will resolve it."""
    return job.launch.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_URI


def check_store(job: Job) -> None:
    if importlib.util.find_spec("mlflow") is None:
        raise UserError(
            "--tracking mlflow: mlflow is not installed in this Python environment. Install it (pip install "
            "mlflow), or train with --tracking none and record the run folder later with `ddpx upload RUN_DIR` "
            "where mlflow is installed."
        )
    uri = store_uri(job)
    scheme = urlsplit(uri).scheme.lower()
    if not scheme or (len(scheme) == 1 and uri[1:3] in (":\\", ":/")):  # a plain path (C:\ too)
        _check_folder(Path(uri), uri)
    elif scheme not in SCHEMES and not any(scheme.startswith(f"{s}+") for s in SCHEMES):
        raise UserError(
            f"--tracking-uri {uri!r}: MLflow cannot store runs at a '{scheme}://' address. Use "
            "sqlite:///PATH.db, a folder, or http://HOST:PORT of an `mlflow server` "
            "(or --tracking none to train without tracking)."
        )
    elif scheme == "sqlite":
        _check_sqlite(uri)
    elif scheme == "file":
        _check_folder(Path(urlsplit(uri).path), uri)
    elif scheme in ("http", "https"):
        try:
            check_server(uri)
        except StoreUnreachable as exc:
            raise UserError(
                f"{exc}. Start it (`mlflow server --host 127.0.0.1 --port 5000`), pass the right address "
                "with --tracking-uri, or train without tracking with --tracking none."
            ) from None


def _check_sqlite(uri: str) -> None:
    """An existing file: take its write lock, as MLflow will. A new one: its folder must take a
    file. (Root ignores permission bits, so only trying tells; nothing is left behind.)"""
    import sqlite3

    path = sqlite_path(uri)
    if path is None:
        raise UserError(
            f"--tracking-uri {uri!r} keeps runs in memory only: they would be lost when the run ends. "
            "Use a file, for example sqlite:///mlflow.db."
        )
    if not path.parent.is_dir():
        raise UserError(
            f"--tracking-uri {uri!r}: the folder {path.parent} does not exist. Create it, or point the "
            "store at an existing folder (sqlite:///mlflow.db keeps it here)."
        )
    _check_space(path.parent, uri)
    if not path.exists() or path.stat().st_size == 0:
        _probe(path.parent, uri)
        return
    try:
        connection = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=10)
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.rollback()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise UserError(
            f"--tracking-uri {uri!r}: {path} cannot be written ({exc}). Choose a store you can write "
            "to, for example sqlite:///mlflow.db here."
        ) from None


def sqlite_path(uri: str) -> Path | None:
    """The file of an ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` URI (None: in memory)."""
    raw = uri[len("sqlite://") :].split("?", 1)[0]
    return None if raw in ("", "/", "/:memory:") else Path(raw[1:])


def store_imports(job: Job) -> tuple[str, ...]:
    """What rank 0 imports for the job's store beyond ``mlflow``: an sqlite store's module (1.6 CPU-s)."""
    return ("mlflow.store.tracking.sqlalchemy_store",) if store_uri(job).startswith("sqlite:") else ()


def prepare_store(job: Job) -> None:
    """Right before launch (not in a dry run): a new sqlite store gets its tables."""
    uri = store_uri(job)
    path = sqlite_path(uri) if uri.startswith("sqlite://") else None
    if path is not None and (not path.exists() or path.stat().st_size == 0):
        create_schema_once(uri, path)


def create_schema_once(uri: str, path: Path) -> None:
    """A new sqlite store gets MLflow's tables here, before launch, under a lock on its folder:
    jobs started at the same moment would otherwise race to create them, and the loser's run
    would be lost. (For a job that runs to its end, the one case where the launching process
    imports mlflow: a store's first use.)"""
    import fcntl
    import logging

    folder = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        if not path.exists() or path.stat().st_size == 0:
            from mlflow.tracking import MlflowClient

            logging.getLogger("mlflow").setLevel(logging.WARNING)
            logging.getLogger("alembic").setLevel(logging.WARNING)
            MlflowClient(uri).search_experiments(max_results=1)
    finally:
        fcntl.flock(folder, fcntl.LOCK_UN)
        os.close(folder)


def _check_folder(path: Path, uri: str) -> None:
    """A file store: the folder, or the nearest folder above it that exists, must take a file."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    _check_space(existing, uri)
    _probe(existing, uri)


def _check_space(folder: Path, uri: str) -> None:
    """A store on a full disk records nothing: refused now, naming the disk."""
    import shutil

    try:
        usage = shutil.disk_usage(folder)
    except OSError:
        return
    free = usage.free
    if usage.total and free < MIN_FREE_BYTES:  # (a pseudo file system, /proc, has no size: the probe speaks)
        mount = folder.resolve()
        while not os.path.ismount(mount) and mount != mount.parent:
            mount = mount.parent
        raise UserError(
            f"--tracking-uri {uri!r}: no space left on the device holding {folder.resolve()} (the disk "
            f"mounted at {mount}: {free // 1024} KiB free), so no run could be recorded. Free space there, "
            "point --tracking-uri at a store on another disk, or train without tracking (--tracking none)."
        )


def _probe(folder: Path, uri: str) -> None:
    import tempfile

    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UserError(
            f"--tracking-uri {uri!r}: nothing can be written in {folder} ({exc.strerror or exc}). "
            "Choose a store you can write to, for example sqlite:///mlflow.db here."
        ) from None
