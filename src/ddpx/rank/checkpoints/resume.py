"""Resuming: which checkpoint a run continues from, and what it restores.

Rank 0 looks for its run folder's own ``checkpoints/last.pt`` first: a run restarted by
torchrun or requeued by Slurm continues where it stopped. On several machines each machine's
command makes its own run folder, and every start notes in the others' (``rank0.json``) which
folder rank 0 writes to: when an elastic restart gives rank 0 to another machine (rank 0's
machine left), the new rank 0 continues from the newer of its own ``last.pt`` and the one that
note names, on the storage the machines share. On its first start a run may instead begin from
``--resume PATH``. Every rank continues from rank 0's choice, so no rank starts afresh beside
ranks that resume. A checkpoint that cannot be read or does not fit is an error, never a silent
fresh start.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ddpx.contract.errors import UserError
from ddpx.contract.job import Job
from ddpx.records.checkpoint_file import check_resumable, load_checkpoint


def resume_source(job: Job) -> Path | None:
    """The checkpoint this start of the job continues from, if any: the newer of this run folder's
    and the one an earlier rank 0 on another machine wrote (``rank0.json``), else ``--resume``."""
    written = [path for path in (job.run_dir.last_checkpoint, earlier_rank0_checkpoint(job)) if path and path.is_file()]
    if written:
        return max(written, key=lambda path: path.stat().st_mtime_ns)
    if job.resume_from:
        return Path(job.resume_from)
    return None


def load_resume_state(job: Job, sharded: bool) -> dict[str, Any] | None:
    """The training state to continue from — rank 0's choice, sent to every rank — checked against
    this job (``sharded``: its wrapper shards)."""
    import socket

    import torch.distributed as dist

    from ddpx.rank.process_group.distributed import broadcast_object

    main = not dist.is_initialized() or dist.get_rank() == 0
    chosen = resume_source(job) if main else None
    source, rank0_folder = broadcast_object((str(chosen) if chosen else None, str(job.run_dir.path) if main else None))
    note_rank0_folder(job, Path(rank0_folder))
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


def earlier_rank0_checkpoint(job: Job) -> Path | None:
    """The ``last.pt`` in the run folder that rank 0 wrote to when this machine last started
    with another machine's rank 0 (see :func:`note_rank0_folder`)."""
    try:
        return Path(json.loads(job.run_dir.rank0_file.read_text())["run_dir"]) / "checkpoints" / "last.pt"
    except (OSError, ValueError, KeyError):
        return None


def note_rank0_folder(job: Job, rank0_folder: Path) -> None:
    """On each machine but rank 0's (its first local rank writes): which run folder rank 0 writes
    to. torchrun's own store cannot keep it: rank 0's machine hosts it, and may be the one that
    leaves."""
    if os.environ.get("LOCAL_RANK", "0") != "0" or rank0_folder == job.run_dir.path:
        return
    note = job.run_dir.rank0_file
    partial = note.with_suffix(".json.part")
    partial.write_text(json.dumps({"run_dir": str(rank0_folder)}))
    os.replace(partial, note)  # never read half-written
