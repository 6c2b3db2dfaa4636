"""Resuming: which checkpoint a run continues from, and what it restores.

Rank 0 looks for its run folder's own ``checkpoints/last.pt`` first: a run restarted by
torchrun or requeued by Slurm continues where it stopped. On its first start a run may instead
begin from ``--resume PATH``. Every rank continues from rank 0's choice (on several machines,
from rank 0's run folder, which they must share), so no rank starts afresh beside ranks that
resume. A checkpoint that cannot be read or does not fit is an error, never a silent fresh start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ddpx.contract.errors import UserError
from ddpx.contract.job import Job
from ddpx.records.checkpoint_file import check_resumable, load_checkpoint


def resume_source(job: Job) -> Path | None:
    """The checkpoint this start of the job continues from, if any: this run folder's, or the one
    an earlier torchrun attempt's rank 0 wrote (on another machine, in a folder they share)."""
    from ddpx.rank.process_group.distributed import remembered_checkpoint

    own = job.run_dir.last_checkpoint
    if own.is_file():
        return own
    earlier = remembered_checkpoint()
    if earlier:
        return Path(earlier)
    if job.resume_from:
        return Path(job.resume_from)
    return None


def load_resume_state(job: Job, sharded: bool) -> dict[str, Any] | None:
    """The training state to continue from — rank 0's choice, sent to every rank — checked against
    this job (``sharded``: its wrapper shards)."""
    import socket

    import torch.distributed as dist

    from ddpx.rank.process_group.distributed import broadcast_object

    chosen = resume_source(job) if not dist.is_initialized() or dist.get_rank() == 0 else None
    source = broadcast_object(str(chosen) if chosen else None)
    if source is None:
        return None
    source = Path(source)
    if not source.is_file():
        raise UserError(
            f"rank 0 continues from {source}, which this rank (on {socket.gethostname()}) cannot read. "
            "A job on several machines continues from rank 0's run folder: give every machine the same "
            "--run-dir on storage they share."
        )
    state = load_checkpoint(source)
    check_resumable(state, source, job.config, sharded)
    state["source"] = str(source)
    return state
