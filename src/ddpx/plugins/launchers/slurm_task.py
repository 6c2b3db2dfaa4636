"""One Slurm task = one rank: ``python -m ddpx.plugins.launchers.slurm_task JOB_FILE`` under srun.

RANK, WORLD_SIZE and LOCAL_RANK come from SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID; the
master address is the first host of the job's node list; the port is derived from the job id in
20000-29999, below the ephemeral ports, so every rank computes the same one without talking.
"""

from __future__ import annotations

import os
import subprocess
import sys


def master_port(job_id: str) -> int:
    return 20000 + int(job_id) % 10000


def first_host(nodelist: str) -> str:
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, check=True)
    return out.stdout.split()[0]


def rank_environment(environ: dict[str, str]) -> dict[str, str]:
    tasks = int(environ["SLURM_NTASKS"])
    nodes = int(environ.get("SLURM_JOB_NUM_NODES", environ.get("SLURM_NNODES", "1")))
    return {
        "RANK": environ["SLURM_PROCID"],
        "WORLD_SIZE": str(tasks),
        "LOCAL_RANK": environ["SLURM_LOCALID"],
        "LOCAL_WORLD_SIZE": str(tasks // max(1, nodes)),
        "MASTER_ADDR": first_host(environ["SLURM_JOB_NODELIST"]),
        "MASTER_PORT": str(master_port(environ["SLURM_JOB_ID"])),
    }


def main() -> None:
    os.environ.update(rank_environment(dict(os.environ)))
    if len(sys.argv) != 2:
        print("usage: python -m ddpx.plugins.launchers.slurm_task JOB_FILE  (run by srun)", file=sys.stderr)
        raise SystemExit(2)
    from ddpx.api import idle_threads_sleep, run_rank

    with idle_threads_sleep():  # before the rank loads torch
        run_rank(sys.argv[1])


if __name__ == "__main__":
    main()
