"""The ``spawn`` launcher: one fresh process per local rank on this machine, started by the
standard library's fork server (``multiprocessing``'s ``forkserver`` start method): a clean
process the launcher starts once, which imports torch and the ddpx worker a single time and
forks every rank from there. The launching ``ddpx`` process imports torch only to check a
checkpoint or pretrained weights the job names; no rank inherits its state (threads, CUDA), and
a job of N ranks pays for one torch import, not N
(measured in ``docs/performance.md``). Each rank gets the launcher's environment as it is when
the job starts, as a spawned process would. Where ``TMPDIR`` is too long a path for the fork
server's socket, the ranks are spawned instead (the ``spawn`` start method).

On one node with no ``--master-port``, local rank 0 hosts the rendezvous store on the port the
OS hands it and passes that port to its peers through a queue the launcher shares with them: a
free port is never "found, closed and hoped for", it is held from the moment it is chosen. With
``--master-port`` (and across machines: the same command on each node with ``--nnodes``,
``--node-rank``, ``--master-addr`` and ``--master-port``) global rank 0 hosts it on that port.
Either way every rank, rank 0 included, joins the store as a client.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import timedelta
from multiprocessing import resource_tracker

from ddpx.api import (
    Job,
    LauncherSpec,
    LaunchOutcome,
    UserError,
    hookimpl,
    run_rank,
    signals_held,
    threads_per_rank,
)
from ddpx.plugins.launchers.fork_server import preload

STORE_TIMEOUT = timedelta(minutes=30)
STOP_GRACE_S = 15.0  # Ctrl-C: time for every rank to record its stop
FAILURE_GRACE_S = 5.0  # after a rank failed: its peers only record the consequence
PR_SET_PDEATHSIG = 1
STOPPED_ON_REQUEST = 75  # a rank's status after a stop request (see ddpx.api.run_rank)
SOCKET_SUFFIX = len("/pymp-xxxxxxxx/listener-xxxxxxxx")
# imported once, in the fork server; torch._dynamo too: DistributedDataParallel's constructor imports
# it (2 CPU-seconds), which every rank paid again (a 3-rank job: 14-16 CPU-s against 9-10 with it here)
PRELOAD = ["torch.distributed", "torch._dynamo", "ddpx.rank.worker", "ddpx.rank.loop.fit", "ddpx.plugin_host.registry"]
# and, first, the module that holds Ctrl-C in the fork server: a rank starts with it held (see _rank_entry)
HOLD_CTRL_C = "ddpx.plugins.launchers.rank_start"


def _host_store(master_addr: str, port: int, one_node: bool):
    """Rank 0's store; the object must live as long as the rank does. On one node it listens on
    ``master_addr`` only (127.0.0.1 by default), not on every interface as TCPStore does when it
    binds by itself: the socket is bound here and handed over."""
    import socket

    from torch.distributed import TCPStore

    if not one_node:
        return TCPStore(master_addr, port, is_master=True, wait_for_workers=False, timeout=STORE_TIMEOUT)
    listener = socket.socket(socket.AF_INET6 if ":" in master_addr else socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((master_addr, port))
    store = TCPStore(
        master_addr,
        listener.getsockname()[1],
        is_master=True,
        wait_for_workers=False,
        timeout=STORE_TIMEOUT,
        master_listen_fd=listener.detach(),
    )
    return store


def _stop_with_parent() -> None:
    """Linux: this rank gets SIGINT (a recorded, clean stop) if the ``ddpx`` process dies first."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGINT)
    except (OSError, AttributeError):
        pass  # not Linux: the rendezvous timeout ends an orphaned rank


def _rank_entry(local_rank: int, job_file: str, env: dict[str, str], node_rank: int, nproc: int, ports) -> None:
    _stop_with_parent()
    try:
        # Ctrl-C was held while the process started (see start_ranks): one that came meanwhile lands here,
        # a clean stop, not a traceback from inside multiprocessing's start-up
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        store = _rank_setup(local_rank, env, node_rank, nproc, ports)
    except KeyboardInterrupt:  # stopped before the rank began (its job records nothing yet): the launcher says so
        raise SystemExit(130) from None
    try:
        run_rank(job_file)
    finally:
        del store


def _rank_setup(local_rank: int, env: dict[str, str], node_rank: int, nproc: int, ports):
    """This rank's environment, threads and rendezvous port; rank 0's store (kept while the rank runs)."""
    os.environ.clear()  # the launcher's environment now, not the fork server's from when it started
    os.environ.update(env)
    os.environ["LOCAL_RANK"] = str(local_rank)
    os.environ["RANK"] = str(node_rank * nproc + local_rank)
    import torch

    if "OMP_NUM_THREADS" in env:  # the fork server sized torch's threads for the job that started it
        torch.set_num_threads(int(env["OMP_NUM_THREADS"]))

    store = None
    if os.environ["RANK"] == "0":
        store = _host_store(env["MASTER_ADDR"], int(env.get("MASTER_PORT", "0")), env["WORLD_SIZE"] == str(nproc))
        for _ in range(nproc - 1 if ports is not None else 0):
            ports.put(store.port)
        os.environ["MASTER_PORT"] = str(store.port)
    elif ports is not None:
        os.environ["MASTER_PORT"] = str(ports.get())
    return store


def start_method() -> str:
    """``forkserver``, unless the temporary folder's path is too long for the fork server's socket
    (a Unix socket path holds 107 bytes; the server's lies two folders below ``TMPDIR``): then
    ``spawn``, which imports torch in every rank but needs no socket."""
    return "forkserver" if len(tempfile.gettempdir().encode()) <= 107 - SOCKET_SUFFIX else "spawn"


def check(job: Job) -> None:
    if job.launch.nnodes > 1 and job.launch.master_port is None:
        raise UserError(
            "--launcher spawn with --nnodes > 1 needs --master-port (and --master-addr, the address of node 0): "
            "every node must find the same rendezvous."
        )


def launch(job: Job) -> LaunchOutcome:
    return start_and_join(job)


def start_and_join(job: Job) -> LaunchOutcome:
    """Start this node's ranks and return the job's outcome: status 0, the first failing rank's
    status, or 130 after Ctrl-C; with the ranks a signal killed."""
    settings = job.launch
    context = multiprocessing.get_context(start_method())
    ports = context.SimpleQueue() if settings.master_port is None else None
    env = {
        "MASTER_ADDR": settings.master_addr,
        "WORLD_SIZE": str(job.world_size),
        "LOCAL_WORLD_SIZE": str(settings.nproc),
        "GROUP_RANK": str(settings.node_rank),
        # every rank, rank 0 too, is a client of the store rank 0 hosts
        "TORCHELASTIC_USE_AGENT_STORE": "True",
    }
    if settings.master_port is not None:
        env["MASTER_PORT"] = str(settings.master_port)
    processes: list = []
    try:
        with threads_per_rank(settings.nproc):
            if context.get_start_method() == "forkserver":  # the tracker, metric and model modules too: once
                preload(context, [HOLD_CTRL_C, *PRELOAD, *job.imports])
            environment = {**os.environ, **env}  # with this rank's share of the cores (OMP_NUM_THREADS)
            processes = [
                context.Process(
                    target=_rank_entry,
                    name=f"ddpx-rank-{local_rank}",
                    daemon=False,
                    args=(
                        local_rank,
                        str(job.run_dir.job_file),
                        environment,
                        settings.node_rank,
                        settings.nproc,
                        ports,
                    ),
                )
                for local_rank in range(settings.nproc)
            ]
            start_ranks(processes, context.get_start_method())
        status = join_ranks(processes)
    except KeyboardInterrupt:  # while the ranks start, too: those started are stopped, none left behind
        started = [p for p in processes if p.pid is not None]  # a rank not started yet has nothing to stop
        stop_ranks(started, signal.SIGINT)  # rank 0 marks its run KILLED
        return LaunchOutcome(130)
    first_rank = settings.node_rank * settings.nproc
    killed = tuple(
        (first_rank + local_rank, signal.Signals(-p.exitcode).name)
        for local_rank, p in enumerate(processes)
        if p.exitcode is not None and p.exitcode < 0 and -p.exitcode not in (signal.SIGTERM, signal.SIGINT)
    )  # not the ones stopped here
    return LaunchOutcome(status, killed=killed)


def start_ranks(processes, method: str) -> None:
    """Start every rank. A Ctrl-C that comes meanwhile lands once every rank has a pid to stop
    (``signals_held``), and in each new rank only at its first line (``_rank_entry``): a rank forked
    from the fork server starts with it held there (``rank_start``); a spawned one (a new
    interpreter, the ``spawn`` method) inherits it held, blocked in this thread's signal mask."""
    # not around the fork server's first start: it imports torch meanwhile, and a second Ctrl-C must land at once
    with signals_held(), ctrl_c_blocked() if method == "spawn" else nullcontext():
        for process in processes:
            process.start()


@contextmanager
def ctrl_c_blocked() -> Iterator[None]:
    """SIGINT and SIGUSR1 blocked (pending, not lost) in this thread inside the block, and so in each
    rank it spawns until the rank lets them through (a stop request once its handler is in place);
    the mask as it was after. The resource tracker is started first: its first start unblocks SIGINT
    in the thread that starts it."""
    resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGUSR1})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def join_ranks(processes) -> int:
    """Wait for every rank; when one fails, stop the others (as torch's launchers do) and return
    its status (1 for a rank killed by a signal). Ranks stopped on request (status 75) all stop
    at the same agreed step: they are waited for, not stopped."""
    running, stopped = list(processes), 0
    while running:
        multiprocessing.connection.wait([process.sentinel for process in running], timeout=1)
        for process in [p for p in running if p.exitcode is not None]:
            running.remove(process)
            if process.exitcode == STOPPED_ON_REQUEST:
                stopped = process.exitcode
            elif process.exitcode != 0:
                stop_ranks(running, signal.SIGTERM, FAILURE_GRACE_S)
                return process.exitcode if process.exitcode > 0 else 1
    return stopped


def stop_ranks(processes, signum: int, grace_s: float = STOP_GRACE_S) -> None:
    """Send ``signum`` to every live rank, give them ``grace_s`` to record their stop, then kill
    what is left."""
    for process in processes:
        if process.is_alive():
            try:
                os.kill(process.pid, signum)
            except ProcessLookupError:  # it ended since: the fork server, its parent, has reaped it
                pass
    deadline = time.monotonic() + grace_s
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join()


@hookimpl
def register_launchers(register):
    register(LauncherSpec("spawn", "one process per rank on this machine (the default)", launch, check))
