"""The modules the spawn launcher's fork server imports before it forks a rank.

``multiprocessing`` keeps one fork server per process and reads its preload list only when it
starts it. A process that launches several jobs (a sweep or a study in one process,
``ddpx.testing.run_recipe`` in a test session) kept the first job's list: after an MLP job, every
rank of each graph-model job imported Chemprop again (10 CPU-seconds a rank on the development
machine). :func:`preload` restarts the server, between jobs, when a job needs a module it has not
imported, with what it had and the new ones, so each module is imported once per server, not once
per rank. It restarts it too when the variables torch's OpenMP library reads once, as the server
loads it (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT``), differ from the server's: call :func:`preload`
with the environment the ranks start with. ``ForkServer._stop`` is the standard library's own way
to stop it (3.10 to 3.13); where it is absent, or while a rank of this process still runs, the
server is left as it is (its ranks import what they lack themselves).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os

from ddpx.api import OPENMP_WAITING

_preloaded: list[str] = []  # what the running fork server imported (as this module asked it)
_environment: dict[str, str | None] = {}  # OPENMP_WAITING as the running fork server started with them


def preload(context, modules: list[str]) -> None:
    """Have ``context``'s fork server import ``modules``, with this process's environment, before it
    forks the next ranks."""
    global _preloaded, _environment
    server = multiprocessing.forkserver._forkserver
    running = getattr(server, "_forkserver_pid", None) is not None
    environment = {name: os.environ.get(name) for name in OPENMP_WAITING}
    if running and set(modules) <= set(_preloaded) and environment == _environment:
        return
    if running:
        if multiprocessing.active_children() or not hasattr(server, "_stop"):
            return  # a rank it forked still runs (the server's exit would stop it), or no way to stop it
        server._stop()
    _preloaded = list(dict.fromkeys([*_preloaded, *modules]))
    _environment = environment
    context.set_forkserver_preload(_preloaded)


def preloaded() -> list[str]:
    """The modules the fork server was started with by :func:`preload` (empty before)."""
    return list(_preloaded)
