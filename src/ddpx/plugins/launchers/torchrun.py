"""The ``torchrun`` launcher: the real ``torch.distributed.run`` starts and supervises the ranks.

One node: ``--standalone`` rendezvous on a free port. Several: ``--nnodes N`` with
``--rdzv-endpoint HOST:PORT`` (c10d rendezvous), the same command on every node.
``--max-restarts`` is passed through. Elastic: ``--nnodes MIN:MAX`` goes on while at least MIN
machines take part; when one leaves (its ranks' peers fail, which uses a restart) or joins (no
restart used), torchrun restarts every rank and they continue from the run folder's
``last.pt`` on the new world size. ``--rdzv-conf`` passes torchrun's rendezvous settings
(``join_timeout``, ``last_call_timeout``, ``close_timeout``, and ``is_host``: whether this machine holds
the rendezvous store, when the address alone does not say). The ranks run ``python -m WORKER_MODULE JOB_FILE``;
rank 0's output reaches the terminal, torchrun's own messages go to the run folder's
``launcher.log`` and its per-attempt folders to ``torchrun-logs/`` there (left to itself,
torchrun makes a new ``torchelastic_*`` folder in the temporary directory on every run and
never removes it).
"""

from __future__ import annotations

import re
import signal
import sys

from ddpx.api import (
    WORKER_MODULE,
    Job,
    LauncherSpec,
    LaunchOption,
    LaunchOutcome,
    UserError,
    hookimpl,
    idle_threads_sleep,
    run_supervised,
)


def command(job: Job) -> list[str]:
    """The torchrun command line for ``job``."""
    settings = job.launch
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nproc-per-node={settings.nproc}",
        f"--max-restarts={settings.max_restarts}",
        f"--log-dir={job.run_dir.torchrun_logs}",
    ]
    if settings.nnodes == 1 and not settings.rdzv_endpoint and settings.master_port:
        cmd += ["--nnodes=1", "--rdzv-backend=c10d", f"--rdzv-endpoint={settings.master_addr}:{settings.master_port}"]
    elif settings.nnodes == 1 and not settings.rdzv_endpoint:
        cmd.append("--standalone")
    else:
        cmd += [
            f"--nnodes={settings.node_range}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={settings.rdzv_endpoint}",
            f"--rdzv-id={job.recipe_name}",
        ]
    if settings.launcher_options.get("rdzv_conf"):
        cmd.append(f"--rdzv-conf={settings.launcher_options['rdzv_conf']}")
    return cmd + ["-m", WORKER_MODULE, str(job.run_dir.job_file)]


_RDZV_SETTING = r"((join_timeout|last_call_timeout|close_timeout)=\d+|is_host=(true|false))"
RDZV_CONF = re.compile(rf"{_RDZV_SETTING}(,{_RDZV_SETTING})*")


def check(job: Job) -> None:
    settings = job.launch
    if settings.nnodes > 1 and not settings.rdzv_endpoint:
        raise UserError(
            "--launcher torchrun with --nnodes > 1 needs --rdzv-endpoint HOST:PORT, an address every node reaches "
            "(usually node 0's)."
        )
    if settings.elastic and settings.max_restarts < 1:
        raise UserError(
            f"--nnodes {settings.node_range} lets machines leave the job, and each departure restarts "
            "the ranks from the last checkpoint: give --max-restarts the number of departures to survive "
            "(--max-restarts 3, say)."
        )
    conf = settings.launcher_options.get("rdzv_conf")
    if conf and not RDZV_CONF.fullmatch(conf):
        raise UserError(
            f"--rdzv-conf takes KEY=SECONDS pairs joined by commas, the keys join_timeout, "
            f"last_call_timeout and close_timeout (last_call_timeout=5), and is_host=true or false "
            f"(whether this machine holds the rendezvous store), not {conf!r}."
        )


# torchrun's failure summary (torch.distributed.elastic's ChildFailedError) gives, for each rank
# that failed, "rank : R (local_rank: L)" and then "exitcode : -N (pid: P)" when signal N ended it
SIGNALLED_RANK = re.compile(r"rank\s*:\s*(\d+) \(local_rank: \d+\)\s*\n\s*exitcode\s*:\s*-(\d+) \(pid")


def launch(job: Job) -> LaunchOutcome:
    start = job.run_dir.launcher_log.stat().st_size if job.run_dir.launcher_log.is_file() else 0
    status = run_torchrun(job)
    with job.run_dir.launcher_log.open(encoding="utf-8", errors="replace") as log:
        log.seek(start)
        killed = killed_ranks(log.read()) if status not in (0, 130) else ()
    return LaunchOutcome(status, killed=killed)


def killed_ranks(summary: str) -> tuple[tuple[int, str], ...]:
    """The ranks a signal killed, from torchrun's failure summary — not those torchrun itself
    stopped with SIGTERM or SIGINT after the first failure."""
    killed = []
    for rank, number in SIGNALLED_RANK.findall(summary):
        try:
            name = signal.Signals(int(number)).name
        except ValueError:
            name = f"signal {number}"
        if name not in ("SIGTERM", "SIGINT"):
            killed.append((int(rank), name))
    return tuple(killed)


def run_torchrun(job: Job) -> int:
    """torchrun's exit status; its own messages go to the run folder's ``launcher.log``. Ctrl-C
    or SIGTERM: torchrun stops its workers on SIGINT, given the time. The ranks' idle threads sleep
    (``OMP_WAIT_POLICY``); their number is torchrun's (``OMP_NUM_THREADS=1`` for several ranks)."""
    with job.run_dir.launcher_log.open("a", encoding="utf-8") as stderr, idle_threads_sleep():
        return run_supervised(command(job), stderr=stderr)


@hookimpl
def register_launchers(register):
    rdzv_conf = LaunchOption(
        "rdzv-conf",
        "torchrun's rendezvous settings for a multi-machine or elastic job, in "
        "seconds: join_timeout (wait for MIN machines), last_call_timeout (wait for more after "
        "MIN joined), close_timeout; is_host=true|false says whether this machine holds the "
        "rendezvous store (by default the one whose address --rdzv-endpoint names).",
        metavar="KEY=S,...",
    )
    register(
        LauncherSpec(
            "torchrun",
            "torch.distributed.run (torchrun) supervises the ranks",
            launch,
            check,
            options=(rdzv_conf,),
            elastic=True,
        )
    )
