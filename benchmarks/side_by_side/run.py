"""Two jobs on one machine: the epoch time of a one-rank ``bbbp_dmpnn`` job alone and beside a
second one, by the CPU threads each is given, for docs/performance.md.

    python benchmarks/side_by_side/run.py --data ../shared/data/bbbp/BBBP.csv --record side-by-side.json
    python benchmarks/side_by_side/run.py --report side-by-side.json    # the table again, no runs

A one-rank job takes every core (``OMP_NUM_THREADS`` = the cores, as ddpx's launcher sets it for
one rank). Started beside another job that does the same, the machine runs two threads per core.
What a thread of torch's OpenMP pool does when it has no work then matters: ddpx starts its ranks
with ``OMP_WAIT_POLICY=PASSIVE`` (it sleeps at once); ``GOMP_SPINCOUNT=300000`` gives it back
libgomp's default without that variable (it spins 300 000 times first, about 3 ms).

Each round runs every setting once, in turn: a setting starts its jobs at once (``ddpx recipe``,
no tracking, each in its own folder) and reads every job's ``epoch_s`` from its
``metrics.jsonl``. The table gives each setting's median epoch over its rounds, every job's epochs
after its first (the first also loads the data), the lowest and highest of the rounds' medians,
and what the machine gets done: epochs a minute, all its jobs together. Run it on an otherwise
idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.common.provenance import commit
from ddpx.api import OPENMP_WAITING


@dataclass(frozen=True)
class Setting:
    name: str
    jobs: int
    env: dict[str, str]  # what each job's environment adds (nothing: ddpx's default)


# libgomp's spin before sleeping when OMP_WAIT_POLICY is unset (ddpx's until 2026-11-29)
SPIN = {"GOMP_SPINCOUNT": "300000"}
SETTINGS = (
    Setting("alone, every core, idle threads sleep (ddpx's default)", 1, {}),
    Setting("alone, every core, idle threads spin first", 1, SPIN),
    Setting("alone, 1 thread", 1, {"OMP_NUM_THREADS": "1"}),
    Setting("two at once, every core each, idle threads sleep (ddpx's default)", 2, {}),
    Setting("two at once, every core each, idle threads spin first", 2, SPIN),
    Setting("two at once, 1 thread each", 2, {"OMP_NUM_THREADS": "1"}),
)


def job_command(data: Path, epochs: int, runs: Path) -> list[str]:
    return [
        *(sys.executable, "-m", "ddpx", "recipe", "bbbp_dmpnn", "--tracking", "none", "--nproc", "1"),
        *("--run-dir", str(runs), f"dataset.path={data}", f"train.max_epochs={epochs}"),
    ]


def epoch_seconds(runs: Path) -> list[float]:
    """Every epoch's seconds of the one run in ``runs``."""
    (metrics,) = runs.glob("*/metrics.jsonl")
    return [json.loads(line)["epoch_s"] for line in metrics.read_text().splitlines()]


def measure(setting: Setting, data: Path, epochs: int, work: Path) -> list[list[float]]:
    """Start the setting's jobs at once; each job's epoch seconds."""
    leave_to_ddpx = ("OMP_NUM_THREADS", *OPENMP_WAITING)  # unless the setting names them
    env = {key: value for key, value in os.environ.items() if key not in leave_to_ddpx}
    folders = [Path(tempfile.mkdtemp(dir=work)) for _ in range(setting.jobs)]
    jobs = [
        subprocess.Popen(job_command(data, epochs, folder), env={**env, **setting.env}, stdout=subprocess.DEVNULL)
        for folder in folders
    ]
    for job, folder in zip(jobs, folders):
        if job.wait() != 0:
            raise SystemExit(f"{setting.name}: a job failed (exit {job.returncode}); its folder: {folder}")
    return [epoch_seconds(folder) for folder in folders]


def after_the_first(jobs: list[list[float]]) -> list[float]:
    return [seconds for job in jobs for seconds in job[1:]]


def report(record: dict) -> str:
    lines = [
        f"{record['date']}: {record['machine']}, {record['cores']} cores, commit {record['commit']}; "
        f"bbbp_dmpnn on {record['data']}, one rank a job, {record['epochs']} epochs a job, "
        f"{record['rounds']} rounds, each setting once a round in turn",
        "",
        "| setting | jobs | median epoch, s | the rounds' medians, s | epochs a minute, the machine |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in record["rows"]:
        median = statistics.median(s for jobs in row["epoch_s"] for s in after_the_first(jobs))
        rounds = [statistics.median(after_the_first(jobs)) for jobs in row["epoch_s"]]
        lines.append(
            f"| {row['name']} | {row['jobs']} | {median:.1f} | {min(rounds):.1f}–{max(rounds):.1f} "
            f"| {60 * row['jobs'] / median:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="BBBP.csv")
    parser.add_argument("--epochs", type=int, default=6, help="epochs a job (default 6)")
    parser.add_argument("--rounds", type=int, default=3, help="times each setting runs, in turn (default 3)")
    parser.add_argument("--record", type=Path, help="write the measurements here (JSON)")
    parser.add_argument("--report", type=Path, help="print the table of a record; start no job")
    args = parser.parse_args(argv)
    if args.report:
        print(report(json.loads(args.report.read_text())))
        return
    if args.data is None:
        parser.error("--data is needed unless --report is given")
    record = {
        "date": str(date.today()),
        "machine": platform.machine(),
        "cores": os.cpu_count(),
        "commit": commit(),
        "data": args.data.name,
        "epochs": args.epochs,
        "rounds": args.rounds,
        "rows": [{**asdict(setting), "epoch_s": []} for setting in SETTINGS],
    }
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(args.rounds):
            for setting, row in zip(SETTINGS, record["rows"]):
                row["epoch_s"].append(measure(setting, args.data.resolve(), args.epochs, Path(work)))
                print(f"round {round_ + 1}, {setting.name}: {row['epoch_s'][-1]}", file=sys.stderr)
    if args.record:
        args.record.write_text(json.dumps(record, indent=1) + "\n")
    print(report(record))


if __name__ == "__main__":
    main()
