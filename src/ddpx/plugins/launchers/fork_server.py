"""The modules the spawn launcher's fork server imports before it forks a rank.

``multiprocessing`` keeps one fork server per process and reads its preload list only when it
starts it. A process that launches several jobs (a sweep or a study in one process,
``ddpx.testing.run_recipe`` in a test session) kept the first job's list: after an MLP job, every
rank of each graph-model job imported Chemprop again (10 CPU-seconds a rank on the development
machine). :func:`preload` restarts the server, between jobs, when a job needs a module it has not
imported, with what it had and the new ones, so each module is imported once per server, not once
per rank. ``ForkServer._stop`` is the standard library's own way to stop it (3.10 to 3.13); where
it is absent, or while a rank of this process still runs, the server is left as it is (its ranks
import what they lack themselves).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver

_preloaded: list[str] = []  # what the running fork server imported (as this module asked it)


def preload(context, modules: list[str]) -> None:
    """Have ``context``'s fork server import ``modules`` before it forks the next ranks."""
    global _preloaded
    server = multiprocessing.forkserver._forkserver
    running = getattr(server, "_forkserver_pid", None) is not None
    if running and set(modules) <= set(_preloaded):
        return
    if running:
        if multiprocessing.active_children() or not hasattr(server, "_stop"):
            return  # a rank it forked still runs (the server's exit would stop it), or no way to stop it
        server._stop()
    _preloaded = list(dict.fromkeys([*_preloaded, *modules]))
    context.set_forkserver_preload(_preloaded)


def preloaded() -> list[str]:
    """The modules the fork server was started with by :func:`preload` (empty before)."""
    return list(_preloaded)
