"""Failures of ranks, recorded in the run folder and reported once.

Every rank that fails writes ``failures/rank-N.json``. The launcher, whatever started the
ranks, reads them back and reports the cause, not the echoes of it on the other ranks, as one
message: a user mistake as its paragraph, anything else with its traceback, shown once. The
cause is a user mistake on any rank if there is one; else the earliest failure that is not a
peer's connection dropping (what the other ranks see when one rank dies inside a collective);
else the earliest failure.
"""

from __future__ import annotations

import json
import re
import time
import traceback

from ddpx.contract.errors import JobFailed, UserError
from ddpx.contract.run_dir import RunDir
from ddpx.records.atomic_save import write_json_atomically


def record_failure(run_dir: RunDir, rank: int, exc: BaseException) -> None:
    """Write what failed on ``rank`` (best effort: never raises)."""
    try:
        run_dir.failures.mkdir(parents=True, exist_ok=True)
        record = {
            "rank": rank,
            "time": time.time(),
            "user_error": isinstance(exc, UserError),
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        }
        path = run_dir.failures / f"rank-{rank}.json"
        write_json_atomically(path, record)
    except Exception:  # reporting must not mask the original failure
        pass


_ECHO = re.compile(
    r"Connection closed by peer|Connection reset by peer|Broken pipe|communicator was aborted|"
    r"Socket Timeout|ProcessGroup.*(aborted|shut ?down)",
    re.IGNORECASE,
)


_COLLECTIVE_TIMEOUT = re.compile(
    r"Timed out waiting \d+ ?ms|Watchdog caught collective operation timeout|DistBackendError.*timed? ?out",
    re.IGNORECASE,
)
TIMEOUT_HINT = (
    "A collective waited longer than the job's --timeout ({timeout}): one rank stood still while the others "
    "waited for it — paused (Ctrl-Z, SIGSTOP), starved of CPU, or far slower at a step than its peers. Give "
    "the job more time with --timeout SECONDS; to pause a job, stop it on request instead (SIGUSR1 to the "
    "ddpx process checkpoints at a step) and start it again with --resume auto."
)


def timeout_hint(run_dir: RunDir) -> str:
    """:data:`TIMEOUT_HINT` with the job's own timeout, read from its ``job.json``."""
    try:
        seconds = json.loads(run_dir.job_file.read_text(encoding="utf-8"))["launch"]["timeout_s"]
        timeout = f"{float(seconds):g} s"
    except (OSError, ValueError, KeyError, TypeError):
        timeout = "1800 s unless given"
    return TIMEOUT_HINT.format(timeout=timeout)


def _cause_order(record: dict) -> tuple:
    echo = bool(_ECHO.search(record.get("message", "")))
    return (not record["user_error"], echo, record["time"], record["rank"])


def read_failures(run_dir: RunDir) -> list[dict]:
    records = []
    if run_dir.failures.is_dir():
        for path in run_dir.failures.glob("rank-*.json"):
            try:
                records.append(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                continue
    return sorted(records, key=_cause_order)


def job_failure(run_dir: RunDir, exit_code: int, fallback: str) -> JobFailed:
    """The error to show for a failed job: the failure that caused it, or ``fallback``."""
    records = read_failures(run_dir)
    if not records:
        return JobFailed(fallback, exit_code or 1)
    first = records[0]
    if first["user_error"]:
        return JobFailed(first["message"], 1)
    others = sorted({r["rank"] for r in records} - {first["rank"]})
    also = f" (then rank(s) {', '.join(map(str, others))})" if others else ""
    message = f"the job failed on rank {first['rank']}{also}; its error:\n{first['traceback'].rstrip()}"
    if _COLLECTIVE_TIMEOUT.search(first["message"]):
        message += "\n" + timeout_hint(run_dir)
    return JobFailed(message, 1)


def clear_failures(run_dir: RunDir) -> None:
    """Forget failures of an earlier attempt (a restarted job starts clean)."""
    if run_dir.failures.is_dir():
        for path in run_dir.failures.glob("rank-*.json"):
            path.unlink(missing_ok=True)
