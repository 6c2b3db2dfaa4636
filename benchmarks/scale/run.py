"""Molecules at scale: ddpx's descriptor pretraining on N MOSES molecules, beside Chemprop 2.3.1
building the same molecules' data in one process.

    python benchmarks/scale/run.py --data ../shared/data/moses/train.csv.gz --sizes 100000 400000 1584663 \\
        --chemprop-max 400000 --record scale.json
    python benchmarks/scale/run.py --report scale.json       # the table again, from a record

For each size N (the file's first N molecules), with a data folder of its own (``DDPX_DATA_DIR``,
so the graph store and the targets are made from nothing):

- **prepare s**: ``ddpx recipe moses_pretrain_dmpnn dataset.limit=N train.max_epochs=0`` on 2
  ranks, the path every run takes: the ranks share out the featurizing and the descriptors and
  write the compact graph store and the target table. The seconds are the stores' own
  (``meta.json``: ``featurize_seconds`` and ``compute_seconds``, from the first part begun to every
  rank's last part written); the record keeps the whole command's wall time too (launch, reading
  the file, the initial model's dev and held-out evaluation).
- **bytes/molecule**: the files of the graph store and of the targets on disk, over N.
- **peak private memory per rank**: each rank's anonymous resident memory (``RssAnon`` of
  ``/proc/<pid>/status``) sampled every 0.2 s from outside while it runs, the largest over the
  ranks; for the preparation and for the training runs. The memory-mapped store and targets are
  file pages that the ranks share in the page cache, not counted there: their size on disk counts
  once for the machine.
- **molecules/s at 1 and 2 ranks**: one epoch of training (``train.max_epochs=1``) on the caches
  just made, the epoch's ``samples_per_s`` from the run's ``metrics.jsonl``; up to ``--train-max``
  molecules (an epoch of all of MOSES takes hours on 2 cores), "not run" above it.
- **Chemprop**: its ``MoleculeDatapoint``\\s and ``MoleculeDataset`` with the graph cache, as
  ``chemprop train`` builds them, in one process (``chemprop_build.py``): its seconds and peak
  ``RssAnon``. It runs up to ``--chemprop-max`` molecules and is stopped when its private memory
  passes ``--chemprop-limit-mb``; above the cap the table says "not run" and a sentence gives its
  memory per molecule at the largest size it finished, and what that would come to (extrapolated).

Linux only (``/proc``). Each size runs one after another; nothing else should run on the machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.common.provenance import commit
from benchmarks.scale.chemprop_build import measure_chemprop
from benchmarks.scale.jobs import measure_ddpx
from benchmarks.scale.report import markdown


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/moses/train.csv.gz"))
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 400_000, 1_584_663])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2], help="ranks to train one epoch at")
    parser.add_argument(
        "--train-max", type=int, default=None, help="largest size trained an epoch at (default: every size)"
    )
    parser.add_argument("--chemprop-max", type=int, default=400_000, help="largest size Chemprop builds (0: none)")
    parser.add_argument("--chemprop-limit-mb", type=float, default=None, help="stop Chemprop's build past this")
    parser.add_argument("--work", type=Path, help="keep the data folders and runs here (default: a temporary one)")
    parser.add_argument("--record", type=Path, help="write the measurements to this JSON file")
    parser.add_argument("--label", default="", help="a line printed under the table (what the numbers are)")
    parser.add_argument(
        "--report", type=Path, nargs="+", help="print the table of this record (of these, as one table), and stop"
    )
    return parser.parse_args(argv)


def memory_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


def measure_size(args: argparse.Namespace, size: int, work: Path, limit_mb: float) -> dict:
    folder = work / f"n{size}"
    trained = args.train_max is None or size <= args.train_max
    row = measure_ddpx(args.data, size, args.ranks if trained else [], folder)
    targets = Path(row.pop("targets_folder"))
    if size <= args.chemprop_max:
        row["chemprop"] = measure_chemprop(args.data, size, targets, limit_mb, folder / "chemprop.log")
    if args.work is None:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(row), file=sys.stderr)
    return row


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.report:
        print(markdown(*(json.loads(path.read_text()) for path in args.report)))
        return
    if not args.data.is_file():
        raise SystemExit(f"no SMILES file at {args.data} (--data)")
    total = memory_mb()
    limit_mb = args.chemprop_limit_mb or 0.85 * total
    record = {
        "benchmark": "scale",
        "machine": f"{platform.node()}: {len(__import__('os').sched_getaffinity(0))} CPUs, {total / 1024:.0f} GiB",
        "memory_mb": total,
        "commit": commit(),
        "date": date.today().isoformat(),
        "data": str(args.data),
        "ranks": args.ranks,
        "train_max": args.train_max,
        "chemprop_max": args.chemprop_max,
        "label": args.label,
        "rows": [],
    }
    work = args.work or Path(tempfile.mkdtemp(prefix="ddpx-scale-"))
    for size in sorted(args.sizes):
        record["rows"].append(measure_size(args, size, work, limit_mb))
        if args.record:
            args.record.write_text(json.dumps(record, indent=2) + "\n")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    print(markdown(record))


if __name__ == "__main__":
    main()
