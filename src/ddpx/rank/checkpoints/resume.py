"""Resuming: which checkpoint a run continues from, and what it restores.

A run restarted by torchrun or requeued by Slurm continues from the newest ``checkpoints/last.pt``
the job has written. On one machine that is its run folder's. On several machines each
machine's command makes its own run folder (on storage they share), and rank 0 may move: torch
gives rank 0 to the machine whose address sorts first, which may be one that joined late, and
rank 0's machine may leave. So each machine keeps a note in its run folder (``rank0.json``) of
the folder rank 0 wrote to and the checkpoint the job last continued from, and at every start
each machine's first local rank offers its own ``last.pt`` and the ones its note names; rank 0
takes the newest of all the machines' offers. On its first start a run may instead begin from
``--resume PATH``. Every rank continues from rank 0's choice, so no rank starts afresh beside
ranks that resume. A checkpoint that cannot be read or does not fit is an error, never a silent
fresh start.
"""

from __future__ import annotations

import json
import os
import socket
import warnings
from pathlib import Path
from typing import Any

from ddpx.contract.errors import UserError
from ddpx.contract.job import Job
from ddpx.records.checkpoint_file import check_resumable, load_checkpoint


def offered_checkpoints(job: Job) -> list[tuple[int, str]]:
    """The checkpoints this machine knows the job wrote, as (mtime in ns, path):
    its own ``last.pt`` and those its note names (see :func:`note_rank0_folder`)."""
    paths = {job.run_dir.last_checkpoint}
    try:
        note = json.loads(job.run_dir.rank0_file.read_text())
        paths |= {Path(note["run_dir"]) / "checkpoints" / "last.pt"} | (
            {Path(note["source"])} if note["source"] else set()
        )
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no note (one machine, or rank 0's own), or one that cannot be read: no more offers
    return [(path.stat().st_mtime_ns, str(path)) for path in paths if path.is_file()]


def resume_source(job: Job, offers: list[tuple[int, str]]) -> Path | None:
    """The checkpoint this start of the job continues from, if any: the newest the machines offer
    (``offers``), else ``--resume PATH``."""
    if offers:
        return Path(max(offers)[1])
    if job.resume_from:
        return Path(job.resume_from)
    return None


def load_resume_state(job: Job, sharded: bool) -> dict[str, Any] | None:
    """The training state to continue from — rank 0's choice, sent to every rank — checked against
    this job (``sharded``: its wrapper shards)."""
    import torch.distributed as dist

    from ddpx.rank.process_group.distributed import broadcast_object, gather_objects

    main = not dist.is_initialized() or dist.get_rank() == 0
    first_here = os.environ.get("LOCAL_RANK", "0") == "0"
    offers = [offer for offered in gather_objects(offered_checkpoints(job) if first_here else []) for offer in offered]
    chosen = resume_source(job, offers) if main else None
    source, rank0_folder = broadcast_object((str(chosen) if chosen else None, str(job.run_dir.path) if main else None))
    if first_here:
        note_rank0_folder(job, Path(rank0_folder), source)
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


def note_rank0_folder(job: Job, rank0_folder: Path, source: str | None) -> None:
    """On each machine but rank 0's: the run folder rank 0 writes to, and the checkpoint this start
    continues from (until rank 0 writes its own), kept where this machine finds them if it becomes
    rank 0. torchrun's store cannot keep them: rank 0's machine hosts it, and may be the one that
    leaves. A note that cannot be written is a warning: the run goes on."""
    if rank0_folder == job.run_dir.path:
        return
    note = job.run_dir.rank0_file
    partial = note.with_name(f".{note.name}.{socket.gethostname()}.{os.getpid()}.tmp")
    try:
        partial.write_text(json.dumps({"run_dir": str(rank0_folder), "source": source}))
        os.replace(partial, note)  # never read half-written
    except OSError as exc:
        partial.unlink(missing_ok=True)
        warnings.warn(
            f"could not note rank 0's run folder in {note} ({exc}): if rank 0's machine leaves, "
            "this machine may not find the job's checkpoint",
            stacklevel=2,
        )
