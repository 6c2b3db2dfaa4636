"""Shared fixtures: run the real ``ddpx`` CLI in a subprocess, with test plugins on the path."""

from __future__ import annotations

import http.server
import json
import os
import pty
import re
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from ddpx.api import OPENMP_WAITING

TESTS = Path(__file__).parent
TEST_PLUGINS = TESTS / "plugins"
TEST_RECIPES = TESTS / "recipes"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
sys.path.insert(0, str(TEST_PLUGINS))  # the test plugins, importable here as in every rank
# A job logs its best model as an MLflow model only in the tests that look at it (about 2 s of rank
# 0's CPU a job, measured: MLflow checks the model's pip requirements against every installed
# distribution and loads the model back to validate its input example); they set it to true.
os.environ.setdefault("DDPX_LOG_MODEL", "false")

# The files that take longest (measured with --durations=0, longest total first, setup included;
# 2026-11-27 at 69c3731; the Chemprop side-by-side moved up at 3361d14, its one test 101 s). pytest-xdist hands whole files to its workers in collection order
# (--dist loadfile --no-loadscope-reorder), so starting these first leaves short files for the
# end and no worker waits long on the other.
LONGEST_FIRST = [
    "test_training_e2e.py",
    "test_vs_chemprop_uncertainty.py",
    "test_signals_and_nodes.py",
    "test_gpu_check.py",
    "test_resume.py",
    "test_sweep_and_runs.py",
    "test_slurm.py",
    "test_study.py",
    "test_peers.py",
    "test_parallel_trials.py",
    "test_mlflow_server_and_ui.py",
    "test_elastic.py",
    "test_example_plugin.py",
    "test_job_on_one_machine.py",
    "test_own_files.py",
    "test_dmpnn.py",
    "test_regression_e2e.py",
    "test_logged_model.py",
    "test_vision_real_mnist.py",
    "test_smiles_e2e.py",
    "test_tracking_store_lost.py",
    "test_bad_input.py",
    "test_quality_tables.py",
    "test_wrappers.py",
    "test_moleculenet_e2e.py",
    "test_lockstep.py",
    "test_uncertainty_runs.py",
    "test_vision_e2e.py",
    "test_pretraining.py",
    "test_plugin_components.py",
    "test_runs_table.py",
    "test_metrics.py",
    "test_graph_store.py",
    "test_ensemble.py",
    "test_bench_collectives.py",
    "test_accumulation_e2e.py",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within a file and among the other files stays


@dataclass
class JobFolder:
    """The folder a job ran in: its run folders, the one run's summary."""

    cwd: Path

    def run_dirs(self) -> list[Path]:
        root = self.cwd / "ddpx-runs"
        return sorted(root.iterdir()) if root.is_dir() else []

    def summary(self) -> dict:
        (run_dir,) = self.run_dirs()
        return json.loads((run_dir / "summary.json").read_text())


@dataclass
class CliResult(JobFolder):
    """A ``ddpx`` command's status and output, and the folder it ran in."""

    returncode: int = 0
    stdout: str = ""
    stderr: str = ""
    marker: str = ""

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def processes_with_marker(marker: str) -> list[int]:
    """PIDs of live processes whose environment carries ``marker`` (to find orphans)."""
    found = []
    needle = f"DDPX_TEST_MARKER={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def orphans(marker: str, wait_s: float = 5.0) -> list[int]:
    """Processes of a finished ``ddpx`` command still alive after ``wait_s`` seconds (the spawn
    launcher's fork server leaves when the command has exited, a moment later)."""
    deadline = time.monotonic() + wait_s
    while (left := processes_with_marker(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


_STORE_TEMPLATE: list[Path] = []


def store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty MLflow sqlite store whose schema MLflow has already created, made once per worker.

    Creating a store's schema (MLflow's own table creation and migrations) costs 4-5 s of CPU each
    time; a test about training, not about store creation, starts from a copy of this one. The tests
    of a store ddpx creates itself pass ``fresh_store=True``."""
    if not _STORE_TEMPLATE:
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        folder = tmp_path_factory.mktemp("mlflow-store-template")
        store = SqlAlchemyStore(f"sqlite:///{folder / 'mlflow.db'}", str(folder / "mlruns"))
        store.engine.dispose()
        _STORE_TEMPLATE.append(folder / "mlflow.db")
    return _STORE_TEMPLATE[0]


def copy_of_new_store(template: Path, folder: Path, name: str = "mlflow.db") -> str:
    """A new, empty store at ``folder/name`` (a copy of the template); its URI. Its Default
    experiment keeps its artifacts under ``folder/mlruns``, as MLflow would have made it there."""
    import shutil
    import sqlite3

    target = folder / name
    shutil.copyfile(template, target)
    with sqlite3.connect(target) as db:
        db.execute(
            "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0", (str(folder / "mlruns" / "0"),)
        )
    db.close()
    return f"sqlite:///{target}"


@pytest.fixture
def new_store(tmp_path, tmp_path_factory) -> str:
    """The URI of a new, empty MLflow sqlite store in the test's folder."""
    return copy_of_new_store(store_template(tmp_path_factory), tmp_path)


def uses_default_store(args: tuple[str, ...]) -> bool:
    """A ``ddpx recipe``/``sweep`` command tracked to MLflow's default store, ./mlflow.db."""
    return bool(args) and args[0] in ("recipe", "sweep") and not any(a.startswith("--tracking") for a in args)


@pytest.fixture
def run_ddpx(tmp_path, tmp_path_factory):
    """Run ``ddpx ARGS`` in a fresh folder; test plugins are importable via DDPX_PLUGINS. A tracked
    ``recipe`` or ``sweep`` finds a new, empty default store there (see ``store_template``) unless
    ``fresh_store=True`` leaves the folder as it is."""

    def run(
        *args: str,
        plugins: tuple[str, ...] = (),
        env: dict | None = None,
        cwd: Path | None = None,
        timeout: float = 240,
        fresh_store: bool = False,
    ) -> CliResult:
        marker = uuid.uuid4().hex
        full_env = dict(os.environ)
        full_env.pop("MLFLOW_TRACKING_URI", None)
        for name in OPENMP_WAITING:  # what ddpx sets for its ranks, asserted as ddpx's (test_training_e2e)
            full_env.pop(name, None)
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TEST_PLUGINS), full_env.get("PYTHONPATH")]))
        full_env["DDPX_TEST_MARKER"] = marker
        full_env["COLUMNS"] = "200"
        # system metrics cost a run a second or two (the logged model too: off for every test, above); the tests
        # of MLflow's records turn them on
        full_env["DDPX_SYSTEM_METRICS"] = "false"
        if plugins:
            full_env["DDPX_PLUGINS"] = ",".join(plugins)
        full_env.update(env or {})
        workdir = cwd or tmp_path
        if not fresh_store and uses_default_store(args) and not (workdir / "mlflow.db").exists():
            copy_of_new_store(store_template(tmp_path_factory), workdir)
        proc = subprocess.run(
            [sys.executable, "-m", "ddpx", *args],
            cwd=workdir,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return CliResult(workdir, proc.returncode, proc.stdout, proc.stderr, marker)

    return run


@pytest.fixture
def ddpx_here(tmp_path, monkeypatch):
    """Run ``ddpx ARGS`` in this process (click's test runner, the same ``cli`` the ``ddpx`` script
    calls), with the environment ``run_ddpx`` gives, in ``cwd``: for commands that end before any
    rank starts, where a new interpreter's imports would cost a second or more each. An exception
    that escapes the CLI (a traceback the user would see) is raised here. No test plugins: a
    launcher plugin's options join the ``recipe`` command once per process. MLflow's tracking URI
    starts unset, as in a new ``ddpx`` process (an earlier test of this worker may have set it in
    this one), and is put back afterwards (``ddpx predict`` sets it)."""
    from click.testing import CliRunner
    from mlflow.tracking._tracking_service import utils as mlflow_uri

    from ddpx.cli import cli

    monkeypatch.setattr(mlflow_uri, "_tracking_uri", None)  # unset, as in a new process; restored at teardown

    def run(*args: str, env: dict | None = None, cwd: Path | None = None) -> CliResult:
        assert "DDPX_PLUGINS" not in (env or {}), "a test plugin needs a ddpx process of its own: use run_ddpx"
        workdir, marker = cwd or tmp_path, uuid.uuid4().hex
        monkeypatch.chdir(workdir)
        full_env = {
            "MLFLOW_TRACKING_URI": None,
            "COLUMNS": "200",
            "DDPX_SYSTEM_METRICS": "false",
            "DDPX_TEST_MARKER": marker,  # in os.environ during the call: a process it starts carries it
            **(env or {}),
        }
        result = CliRunner().invoke(cli, list(args), env=full_env, prog_name="ddpx")
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return CliResult(workdir, result.exit_code, result.stdout, result.stderr, marker)

    return run


@pytest.fixture
def job_here(tmp_path, monkeypatch):
    """Run a recipe through the public ``ddpx.testing.run_recipe`` from this process, in ``cwd``:
    its ranks are real spawn-launcher ranks, forked from this worker's fork server, which imported
    torch once for every such job of the worker (a job started by a new ``ddpx`` process pays its
    own, 5-8 CPU-seconds). For tests of what a run leaves (its folder, its MLflow run, its
    numbers), not of what the CLI prints; ``env`` is the ranks' environment too, ``cwd`` the
    folder the job starts in (the test's own by default)."""
    from ddpx.testing import run_recipe

    def run(
        recipe: str,
        *overrides: str,
        nproc: int = 2,
        plugins: tuple[str, ...] = (),
        tracking_uri: str | None = None,
        env: dict | None = None,
        cwd: Path | None = None,
    ) -> JobFolder:
        workdir = cwd or tmp_path
        for key, value in {"DDPX_SYSTEM_METRICS": "false", **(env or {})}.items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(workdir)  # started there, as `ddpx recipe` in that folder: MLflow's ./mlruns is there
        run_recipe(
            recipe,
            overrides,
            plugins=plugins,
            nproc=nproc,
            tracking="mlflow" if tracking_uri else "none",
            tracking_uri=tracking_uri,
            workdir=workdir,
        )
        return JobFolder(workdir)  # a job that failed raised above

    return run


@pytest.fixture(scope="session")
def tracking_uri(tmp_path_factory) -> str:
    """One sqlite MLflow store for the session (its schema is created once)."""
    return copy_of_new_store(store_template(tmp_path_factory), tmp_path_factory.mktemp("mlflow"))


@pytest.fixture
def experiment() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        self.server.requests.append(self.path)
        super().do_GET()

    def log_message(self, *args):
        pass


@contextmanager
def serve_directory(folder: Path):
    """A real HTTP server on loopback serving ``folder``; yields (base URL, list of request paths)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_CountingHandler, directory=str(folder)))
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests
    finally:
        server.shutdown()
        thread.join()


def run_in_terminal(args: list[str], cwd, columns: int = 100, expect: int = 0) -> str:
    """Run ``ddpx ARGS`` with stdout and stderr on a pseudo-terminal ``columns`` wide (so rich sees a
    terminal); return everything it printed, ANSI escapes removed."""
    leader, follower = pty.openpty()
    path = os.pathsep.join(filter(None, [str(TEST_PLUGINS), os.environ.get("PYTHONPATH")]))  # ddpx as here
    env = {**os.environ, "PYTHONPATH": path, "COLUMNS": str(columns), "TERM": "xterm-256color"}
    env.pop("MLFLOW_TRACKING_URI", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "ddpx", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: every writer exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    text = ANSI.sub("", b"".join(chunks).decode(errors="replace")).replace("\r\n", "\n")
    assert process.wait(timeout=240) == expect, text
    return text
