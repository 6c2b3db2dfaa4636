"""Jobs after the first in one process: the fork server restarted with a new job's modules, or not.

    python benchmarks/launch_cost/fork_server_reuse.py [--repeats 2] [--jobs 3] [--data ../shared/data]

A sweep, a study or a test session runs several jobs in one process, and ``multiprocessing``
keeps that process's fork server (and the modules it preloaded) from its first job. Here one
process runs an untracked ``mlp_synthetic`` job, then ``--jobs`` one-epoch ``bbbp_dmpnn`` jobs
(``ddpx.testing.run_recipe``, 2 CPU ranks), and reports the CPU-seconds of each job, the machine's
busy time around it (the ranks are the fork server's children): ddpx as it is (the server
restarted with Chemprop for the first graph job) against the server kept as the first job left
it (the launcher's ``preload`` replaced by a plain ``set_forkserver_preload``: every rank imports
Chemprop itself). The two are interleaved, each a fresh process. Needs the ``chem`` extra and
BBBP (``--data``); run it with nothing else running.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run by path: `benchmarks` importable

from benchmarks.launch_cost.run import busy_cpu_seconds  # noqa: E402
from benchmarks.launch_cost.sides import interleaved, machine_line  # noqa: E402


def one_process(kept: bool, jobs: int, bbbp: Path) -> list[float]:
    """CPU-seconds of each job in this process: the MLP job first, then the graph jobs."""
    from ddpx.testing import run_recipe

    if kept:  # as before the restart: the first job's preload list stays
        import ddpx.plugins.launchers.spawn as spawn

        spawn.preload = lambda context, modules: context.set_forkserver_preload(modules)
    recipes = [("mlp_synthetic", ["train.max_epochs=1"])]
    recipes += [("bbbp_dmpnn", [f"dataset.path={bbbp}", "train.max_epochs=1"])] * jobs
    seconds = []
    with tempfile.TemporaryDirectory() as workdir:
        for recipe, overrides in recipes:
            before = busy_cpu_seconds()
            run_recipe(recipe, overrides, workdir=workdir)
            seconds.append(busy_cpu_seconds() - before)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--one", choices=["restarted", "kept"], help=argparse.SUPPRESS)  # a child's side
    args = parser.parse_args()
    bbbp = (args.data / "bbbp" / "BBBP.csv").resolve()
    if args.one:
        print(json.dumps(one_process(args.one == "kept", args.jobs, bbbp)))
        return
    extra = ["--jobs", str(args.jobs), "--data", str(args.data)]
    runs = interleaved(__file__, ["restarted", "kept"], args.repeats, extra)
    print(machine_line(args.repeats, "CPU-seconds of each job in one process"))
    print("\n| fork server | MLP job (first) | each graph job (first; the rest) | graph jobs, total |")
    print("| --- | --- | --- | --- |")
    for side, repeats in runs.items():
        mlp = statistics.median(r[0] for r in repeats)
        first = statistics.median(r[1] for r in repeats)
        rest = statistics.median(x for r in repeats for x in r[2:])
        total = statistics.median(sum(r[1:]) for r in repeats)
        print(f"| {side} | {mlp:.1f} | {first:.1f}; {rest:.1f} | {total:.1f} |")


if __name__ == "__main__":
    main()
