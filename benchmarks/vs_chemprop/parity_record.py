"""``run.py --record FILE``: every run's numbers, written as each run ends, so that a table in the docs
regenerates from a committed file (``run.py --report FILE``) and a long benchmark goes on where it
stopped (the same command and ``--record``: every (run, seed) the record holds is kept, not run again).

A record is of one set, file, split, number of epochs, list of runs and commit: one of other
settings or code is refused rather than mixed in. ``--report`` takes several records of one set
and settings (a seed each, say, run at different times) and prints them as one table of all
their seeds, each seed once.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from datetime import date
from pathlib import Path

from benchmarks.common.provenance import commit

SAME = ("set", "data", "heldout", "epochs", "runs", "commit")  # what two records of one table share


def add_record_options(parser: argparse.ArgumentParser) -> None:
    """``--record`` and ``--report`` on run.py's command line."""
    parser.add_argument(
        "--record",
        type=Path,
        help="write every run's numbers here (JSON) as each run ends; the same command with a record of the same "
        "settings and code goes on where it stopped (every run of a seed it holds is kept)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        help="print the tables of this record again and run nothing; several records of one set and settings "
        "(a seed each, say) print as one table of all their seeds",
    )


def new_record(args, data: str, heldout: int) -> dict:
    """An empty record of this command's settings, on this machine and commit, today."""
    return {
        "date": str(date.today()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
        "commit": commit(),
        "set": args.set,
        "data": data,
        "heldout": heldout,
        "epochs": args.epochs,
        "seeds": list(args.seeds),
        "runs": list(args.runs),
        "alternate": bool(args.alternate),
        "lockstep": bool(args.lockstep),
        "results": {run: [] for run in args.runs},
    }


def going_on(record: dict, path: Path | None) -> dict:
    """The record at ``path`` to go on with, where it is of the same settings and code; ``record``
    (new) where there is none. Another record is refused: name another file."""
    if path is None or not path.exists():
        return record
    held = json.loads(path.read_text(encoding="utf-8"))
    differ = [key for key in (*SAME, "seeds", "alternate", "lockstep") if held.get(key) != record[key]]
    if differ:
        raise SystemExit(
            f"{path} is a record of other {', '.join(differ)}: name another --record file (a record goes on "
            "only with the settings and code it began with)"
        )
    return held


def has_result(record: dict, run: str, seed: int) -> bool:
    return any(result["seed"] == seed for result in record["results"][run])


def add_result(record: dict, run: str, seed: int, result: dict, path: Path | None) -> None:
    """One run's result, kept in the record and written at once (``path``)."""
    record["results"][run].append({**result, "seed": seed})
    if path is not None:
        path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def merged(records: list[dict]) -> dict:
    """Records of one set and settings as one, their seeds in the order given; a seed twice is refused."""
    first, seeds = records[0], []
    for record in records:
        differ = [key for key in SAME if record[key] != first[key]]
        if differ:
            raise SystemExit(f"--report: records of other {', '.join(differ)} make no one table")
        seeds += record["seeds"]
    if len(set(seeds)) != len(seeds):
        raise SystemExit(f"--report: a seed is in more than one record ({seeds})")
    results = {run: [r for record in records for r in record["results"][run]] for run in first["runs"]}
    dates = sorted({record["date"] for record in records})
    return {**first, "date": " to ".join(dict.fromkeys([dates[0], dates[-1]])), "seeds": seeds, "results": results}


def measured_line(record: dict) -> str:
    """The table's first line: when, where, which code, which data and settings."""
    return (
        f"{record['date']}: {record['machine']}, commit {record['commit']}; {record['set']} ({record['data']}), "
        f"MoleculeNet's scaffold split 80/10/10 as ddpx makes it ({record['heldout']} held-out molecules), "
        f"{record['epochs']} epochs, seeds {' '.join(map(str, record['seeds']))}"
    )
