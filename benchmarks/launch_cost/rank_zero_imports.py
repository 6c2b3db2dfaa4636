"""Tracked jobs in one process (a sweep's trials): rank 0's store and figure modules preloaded, or not.

    python benchmarks/launch_cost/rank_zero_imports.py [--repeats 2] [--jobs 4]

Rank 0 of every job imports MLflow's SQL store (an ``sqlite:`` store, the default) as its run
starts and matplotlib as it draws the held-out figures; a sweep, a study or a test session runs
its jobs from one process, whose fork server outlives each. Here one process runs ``--jobs``
one-epoch ``mlp_synthetic`` jobs tracked in one sqlite store (``ddpx.testing.run_recipe``, 2 CPU
ranks) and reports the CPU-seconds of each job, the machine's busy time around it: ddpx as it is
(the job plans those modules, ``TrackerSpec.imports_for`` and ``FIGURE_IMPORTS``, and the fork
server imports them once) against the same jobs with the two left out of the plan (rank 0 of each
job imports them again). The two are interleaved, each a fresh process; run it with nothing else
running.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run by path: `benchmarks` importable

from benchmarks.launch_cost.run import busy_cpu_seconds  # noqa: E402
from benchmarks.launch_cost.sides import interleaved, machine_line  # noqa: E402

LEFT_OUT = {"mlflow.store.tracking.sqlalchemy_store", "matplotlib.figure", "matplotlib.backends.backend_agg"}


def one_process(planned: bool, jobs: int) -> list[list[float]]:
    """``[CPU-seconds, wall seconds]`` of each job in this process."""
    from ddpx.launch import plan
    from ddpx.testing import run_recipe

    if not planned:  # rank 0 imports them itself, as before they were planned
        as_planned = plan.job_imports
        plan.job_imports = lambda *args: [m for m in as_planned(*args) if m not in LEFT_OUT]
    measured = []
    with tempfile.TemporaryDirectory() as workdir:
        uri = f"sqlite:///{workdir}/mlflow.db"
        for _ in range(jobs):
            before, start = busy_cpu_seconds(), time.perf_counter()
            run_recipe("mlp_synthetic", ["train.max_epochs=1"], tracking="mlflow", tracking_uri=uri, workdir=workdir)
            measured.append([busy_cpu_seconds() - before, time.perf_counter() - start])
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--one", choices=["planned", "left to rank 0"], help=argparse.SUPPRESS)  # a child's side
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_process(args.one == "planned", args.jobs)))
        return
    runs = interleaved(__file__, ["planned", "left to rank 0"], args.repeats, ["--jobs", str(args.jobs)])
    print(machine_line(args.repeats, f"{args.jobs} tracked jobs in one process"))
    print("\n| store and figure modules | first job: CPU-s, wall s | each later job: CPU-s, wall s |")
    print("| --- | --- | --- |")
    for side, repeats in runs.items():
        first = [statistics.median(r[0][i] for r in repeats) for i in (0, 1)]
        rest = [statistics.median(job[i] for r in repeats for job in r[1:]) for i in (0, 1)]
        print(f"| {side} | {first[0]:.1f}, {first[1]:.1f} | {rest[0]:.1f}, {rest[1]:.1f} |")


if __name__ == "__main__":
    main()
