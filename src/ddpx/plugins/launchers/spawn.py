"""The ``spawn`` launcher: ``torch.multiprocessing`` starts one worker process per local rank.

The rendezvous store is created here, in the launching process, on the port the OS hands out
(or ``--master-port``), and kept open while the ranks run; the ranks join it as clients. So a
free port is never "found, closed and hoped for": the port is held from the moment it is
chosen. Across machines run the same command on each node with ``--nnodes``, ``--node-rank``,
``--master-addr`` and ``--master-port`` (node 0 hosts the store).
"""

from __future__ import annotations

import os
from datetime import timedelta

from ddpx.api import Job, LaunchOutcome, LauncherSpec, UserError, hookimpl, run_rank, threads_per_rank

STORE_TIMEOUT = timedelta(minutes=30)


def _rank_entry(local_rank: int, job_file: str, env: dict[str, str], node_rank: int, nproc: int) -> None:
    os.environ.update(env)
    os.environ["LOCAL_RANK"] = str(local_rank)
    os.environ["RANK"] = str(node_rank * nproc + local_rank)
    run_rank(job_file)


def check(job: Job) -> None:
    if job.launch.nnodes > 1 and job.launch.master_port is None:
        raise UserError(
            "--launcher spawn with --nnodes > 1 needs --master-port (and --master-addr, the address of node 0): "
            "every node must find the same rendezvous."
        )


def launch(job: Job) -> LaunchOutcome:
    return LaunchOutcome(start_and_join(job))


def start_and_join(job: Job) -> int:
    """Start this node's ranks, hold the rendezvous store (node 0) while they run, and return the
    job's exit status."""
    import logging

    import torch.multiprocessing as mp
    from torch.distributed import TCPStore

    # the failing rank's own error is reported; torch's note about stopping the others is noise
    logging.getLogger("torch.multiprocessing.spawn").setLevel(logging.ERROR)
    settings = job.launch
    store = None
    port = settings.master_port
    if settings.node_rank == 0:
        try:
            store = TCPStore(settings.master_addr, port or 0, is_master=True, wait_for_workers=False, timeout=STORE_TIMEOUT)
        except RuntimeError as exc:
            raise UserError(
                f"cannot open the rendezvous port {settings.master_addr}:{port}: {exc}. Choose another --master-port, "
                "or leave it out to let ddpx pick a free one."
            ) from None
        port = store.port
    env = {
        "MASTER_ADDR": settings.master_addr,
        "MASTER_PORT": str(port),
        "WORLD_SIZE": str(job.world_size),
        "LOCAL_WORLD_SIZE": str(settings.nproc),
        "GROUP_RANK": str(settings.node_rank),
        # every rank is a client of the store held above (or by node 0)
        "TORCHELASTIC_USE_AGENT_STORE": "True",
    }
    with threads_per_rank(settings.nproc):
        context = mp.start_processes(
            _rank_entry,
            args=(str(job.run_dir.job_file), env, settings.node_rank, settings.nproc),
            nprocs=settings.nproc,
            join=False,
            start_method="spawn",
        )
    try:
        while not context.join(timeout=1):
            pass
    except mp.ProcessExitedException as exc:
        return exc.exit_code if exc.exit_code and exc.exit_code > 0 else 1
    except mp.ProcessRaisedException:
        return 1
    except KeyboardInterrupt:
        stop_ranks(context.processes)
        return 130
    finally:
        del store
    return 0


def stop_ranks(processes, grace_s: float = 15.0) -> None:
    """Ctrl-C: pass SIGINT to every rank (rank 0 marks its run KILLED), then kill what is left."""
    import signal
    import time

    for process in processes:
        if process.is_alive():
            os.kill(process.pid, signal.SIGINT)
    deadline = time.monotonic() + grace_s
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join()


@hookimpl
def register_launchers(register):
    register(LauncherSpec("spawn", "torch.multiprocessing processes on this machine (the default)", launch, check))
