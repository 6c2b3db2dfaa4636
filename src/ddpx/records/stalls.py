"""Stall records in the run folder: ``stalls/rank-N.json``, written by a rank whose progress
stands still (see :mod:`ddpx.rank.diagnostics.stall`), read back by rank 0's report and by the launcher
when the job fails."""

from __future__ import annotations

import json
from pathlib import Path

from ddpx.records.atomic_save import write_json_atomically


def stall_file(run_dir: Path, rank: int) -> Path:
    return Path(run_dir) / "stalls" / f"rank-{rank}.json"


def write_stall(path: Path, record: dict) -> None:
    """Write one rank's record atomically (best effort: a report must never fail the rank)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomically(path, record)
    except OSError:
        pass


def read_stalls(run_dir: Path) -> list[dict]:
    """The stall records in a run folder, by rank."""
    records = []
    for path in (Path(run_dir) / "stalls").glob("rank-*.json"):
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return sorted(records, key=lambda record: record["rank"])


def clear_stalls(run_dir: Path) -> None:
    """Forget the records of an earlier attempt."""
    for path in (Path(run_dir) / "stalls").glob("rank-*.json"):
        path.unlink(missing_ok=True)


def describe_stalls(records: list[dict]) -> str:
    """Which ranks made no progress, where, for how long, and their process ids."""
    lines = [
        f"  rank {r['rank']} (pid {r['pid']} on {r['host']}): {r['where']}, for {r['quiet_s']:.0f} s" for r in records
    ]
    ranks = ", ".join(str(r["rank"]) for r in records)
    return "\n".join(
        [
            f"no progress on rank(s) {ranks}:",
            *lines,
            "(`py-spy dump --pid PID` on that host shows a rank's Python stack.)",
        ]
    )
