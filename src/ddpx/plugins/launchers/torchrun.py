"""The ``torchrun`` launcher: the real ``torch.distributed.run`` starts and supervises the ranks.

One node: ``--standalone`` rendezvous on a free port. Several: ``--nnodes N`` with
``--rdzv-endpoint HOST:PORT`` (c10d rendezvous), the same command on every node.
``--max-restarts`` is passed through. The ranks run ``python -m ddpx.core.worker JOB_FILE``;
rank 0's output reaches the terminal, torchrun's own messages go to the run folder's
``launcher.log`` and its per-attempt folders to ``torchrun-logs/`` there (left to itself,
torchrun makes a new ``torchelastic_*`` folder in the temporary directory on every run and
never removes it).
"""

from __future__ import annotations

import signal
import subprocess
import sys

from ddpx import hookimpl
from ddpx.core.components import LauncherSpec
from ddpx.core.errors import UserError
from ddpx.core.job import Job


def command(job: Job) -> list[str]:
    """The torchrun command line for ``job``."""
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={job.nproc_per_node}",
           f"--max-restarts={job.max_restarts}", f"--log-dir={job.paths.torchrun_logs}"]
    if job.nnodes == 1 and not job.rdzv_endpoint and job.master_port:
        cmd += ["--nnodes=1", "--rdzv-backend=c10d", f"--rdzv-endpoint={job.master_addr}:{job.master_port}"]
    elif job.nnodes == 1 and not job.rdzv_endpoint:
        cmd.append("--standalone")
    else:
        cmd += [f"--nnodes={job.nnodes}", "--rdzv-backend=c10d", f"--rdzv-endpoint={job.rdzv_endpoint}",
                f"--rdzv-id={job.recipe_name}"]
    return cmd + ["-m", "ddpx.core.worker", str(job.paths.job_file)]


def check(job: Job) -> None:
    if job.nnodes > 1 and not job.rdzv_endpoint:
        raise UserError(
            "--launcher torchrun with --nnodes > 1 needs --rdzv-endpoint HOST:PORT, an address every node reaches "
            "(usually node 0's)."
        )


def launch(job: Job) -> int:
    log = job.paths.launcher_log
    with log.open("a", encoding="utf-8") as stderr:
        process = subprocess.Popen(command(job), stderr=stderr)
        try:
            return process.wait()
        except KeyboardInterrupt:  # Ctrl-C: torchrun stops its workers on SIGINT; give it the time
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            return 130


@hookimpl
def register_launchers(register):
    register(LauncherSpec("torchrun", "torch.distributed.run (torchrun) supervises the ranks", launch, check))
