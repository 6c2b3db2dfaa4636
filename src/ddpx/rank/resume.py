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
from ddpx.launch.job import Job
from ddpx.rank.checkpoint import load_checkpoint


def resume_source(job: Job) -> Path | None:
    """The checkpoint this start of the job continues from, if any: this run folder's, or the one
    an earlier torchrun attempt's rank 0 wrote (on another machine, in a folder they share)."""
    from ddpx.rank.distributed import remembered_checkpoint

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

    from ddpx.rank.distributed import broadcast_object

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


def check_init_fits(state: dict[str, Any], source: Path | str, config: dict[str, Any]) -> None:
    """A ddpx checkpoint given as ``train.init_from`` holds this recipe's model (its ``model.*``
    keys fix every weight's shape); a plain state dict is checked when the model loads it."""
    written_for = state.get("recipe", {}).get("model") if isinstance(state.get("recipe"), dict) else None
    if written_for is not None and written_for != config["model"]:
        differ = sorted(
            k for k in set(written_for) | set(config["model"]) if written_for.get(k) != config["model"].get(k)
        )
        shown = ", ".join(f"model.{k}={written_for.get(k)!r} there, {config['model'].get(k)!r} here" for k in differ)
        raise UserError(
            f"train.init_from '{source}' was written for another model ({shown}); its weights cannot "
            "start this one. Use a checkpoint of the same model, or set the model keys to match."
        )


def check_resumable(
    state: dict[str, Any], source: Path | str, config: dict[str, Any], sharded: bool | None = None
) -> None:
    """A checkpoint a run can continue from: ddpx's training state, for this recipe's model, and
    sharded when this recipe's wrapper shards (``sharded``, when known)."""
    missing = ({"epoch", "ranks"} if state.get("sharded") else {"model", "optimizer", "epoch", "ranks"}) - set(state)
    if missing:
        raise UserError(
            f"checkpoint '{source}' cannot resume a run: it lacks {', '.join(sorted(missing))}. "
            "Use a last.pt written by ddpx, or start the run afresh."
        )
    written = state.get("recipe", {})  # the recipe the checkpoint was written with
    if written.get("model") != config["model"]:
        raise UserError(
            f"checkpoint '{source}' was written for another model ({written.get('model')}); "
            "resume it with the recipe that wrote it."
        )
    written_by = written.get("train", {}).get("select_by", "metric")
    if written_by != config["train"]["select_by"]:
        raise UserError(
            f"checkpoint '{source}' kept its best epoch by train.select_by={written_by}, and this run "
            f"asks for train.select_by={config['train']['select_by']}: the best so far would mix the two "
            f"rules. Resume it with train.select_by={written_by}, or start the run afresh."
        )
    if sharded is not None and bool(state.get("sharded")) != sharded:
        wrapper = written.get("train", {}).get("wrapper", "another wrapper")
        raise UserError(
            f"checkpoint '{source}' holds {'sharded' if state.get('sharded') else 'whole'} weights and "
            f"optimizer state (written with train.wrapper={wrapper}), which train.wrapper="
            f"{config['train']['wrapper']} cannot continue. Resume it with train.wrapper={wrapper}."
        )
