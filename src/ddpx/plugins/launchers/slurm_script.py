"""The sbatch script the ``slurm`` launcher writes into the run folder (readable on purpose)."""

from __future__ import annotations

import shlex
import sys

from ddpx.api import Job


def sbatch_script(job: Job) -> str:
    options, settings = job.launch.launcher_options, job.launch
    lines = [
        "#!/bin/bash",
        f"# ddpx: recipe {job.recipe_name}, {settings.nnodes} node(s) x {settings.nproc} rank(s), backend {settings.backend}",
        f"#SBATCH --job-name=ddpx-{job.recipe_name}",
        f"#SBATCH --nodes={settings.nnodes}",
        f"#SBATCH --ntasks-per-node={settings.nproc}",
        f"#SBATCH --output={job.run_dir.path}/slurm-%j.out",
        "#SBATCH --open-mode=append",
        # preemption: USR1 reaches every rank this long before the end; rank 0 checkpoints and requeues
        f"#SBATCH --signal=USR1@{options.get('signal_seconds', 90)}",
        "#SBATCH --requeue",
    ]
    if settings.backend == "nccl":
        lines.append(f"#SBATCH --gpus-per-node={settings.nproc}")
    for flag in ("partition", "time", "account"):
        if options.get(flag):
            lines.append(f"#SBATCH --{flag}={options[flag]}")
    lines += [f"#SBATCH {arg}" for arg in options.get("sbatch_arg", [])]
    lines += [
        "",
        "# one task per rank; each maps SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID to RANK/WORLD_SIZE/LOCAL_RANK.",
        "# A requeued run starts here again and continues from the run folder's last checkpoint.",
        f"srun --kill-on-bad-exit=1 {shlex.quote(sys.executable)} -m ddpx.plugins.launchers.slurm_task "
        f"{shlex.quote(str(job.run_dir.job_file))}",
        "",
    ]
    return "\n".join(lines)
