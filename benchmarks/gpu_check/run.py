"""Everything ddpx says about GPUs, checked in one command, as one Markdown table.

    python benchmarks/gpu_check/run.py --data ../shared/data          # on a GPU machine (MNIST, BBBP found there)
    python benchmarks/gpu_check/run.py --dry                          # the same code paths on CPU, tiny sizes

Each row runs ddpx through its real command line (``python -m ddpx recipe ... --tracking none``)
or, for the throughput ratio, beside a plain PyTorch loop in this process:

- **backend and devices**: ``--backend auto`` picks NCCL on a GPU machine and every rank trains on
  ``cuda:<LOCAL_RANK>`` (each rank reports its device through ``probe.py``);
- **GPU against CPU**: the synthetic MLP on one GPU rank, and on one CPU rank with gloo: held-out
  accuracy within ``MATCH`` of each other; a world of 2 on NCCL where the machine has 2 GPUs;
- **precision**: bf16 and fp16 (fp16 with loss scaling) against fp32 on the same run: the first
  epoch's training loss within ``FIRST_LOSS`` (relative), no NaN, held-out accuracy within ``MATCH``;
- **MNIST to 99 %**: ``mnist_convnet`` with the fast data path on one GPU; wall time from launch
  to the end of the run that holds 99.0 % held-out accuracy;
- **the fast image path never waits for the GPU**: with CUDA's sync debug mode set to error, the
  fast path builds training batches (a copy that blocks the host raises);
- **ResNet-18 throughput**: images/s of ``cifar10_resnet18`` (50 000 generated CIFAR-shaped images,
  4 epochs, the median of epochs 2–4) through ddpx against a plain loop of the same model,
  batch, precision and training batches (the fast path's crop, flip and normalisation) in this
  process (the median of 6 windows of 200 steps, 3 before ddpx's run and 3 after it, so that a
  machine whose speed drifts during the row moves both sides alike): the CIFAR stem with channels-last and
  ``torch.compile`` on and off (the goal: a ratio of at least 0.97; the row prints both spreads),
  and the recipe's default ImageNet stem, shown and not judged (its step is launch-bound);
- **a step, traced**: ``torch.profiler`` over 20 steps of ddpx (``train.profile_steps``) and of the
  plain loop (the CIFAR stem, channels-last): the host's and the device's milliseconds per step,
  shown, not judged; ``--out DIR`` keeps both operator tables (``ddpx_ops.txt``, ``plain_ops.txt``);
- **molecules/s**: ``bbbp_rnn`` and ``bbbp_dmpnn`` training throughput on the GPU against the CPU;
- **one pretraining epoch**: ``moses_pretrain_dmpnn`` on 200 000 MOSES molecules (graphs and targets
  prepared by CPU ranks first), one epoch on one GPU rank, and that rate carried to all of MOSES.

``--dry`` runs every row on the CPU with tiny sizes (gloo), so the script keeps working between
GPU sessions; rows that need a GPU say "dry: CPU", and rows whose data is absent say so. Of the
ResNet rows, a dry run walks the ImageNet stem's (its ddpx run also serves the traced row): the
same code, a sixteenth of the CIFAR stem's work on a CPU. Needs
neither MLflow nor Optuna; RDKit and Chemprop only for the molecule rows (skipped without them).

The checks live beside this script: ``device_checks.py`` (backend, GPU against CPU, precision),
``data_checks.py`` (MNIST, the fast path's waits, molecules), ``resnet_checks.py`` (throughput and
the traced step, against the plain loop of ``loops.py``), all sharing the runs of ``runs.py``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.gpu_check.data_checks import fast_path_sync, mnist, molecules
from benchmarks.gpu_check.device_checks import backend_and_devices, gpu_against_cpu, precision
from benchmarks.gpu_check.pretraining_check import pretraining
from benchmarks.gpu_check.resnet_checks import resnet_profile, resnet_throughput
from benchmarks.gpu_check.runs import Row, Runs

CHECKS = (  # in the table's order; --only names them
    backend_and_devices,
    gpu_against_cpu,
    precision,
    mnist,
    fast_path_sync,
    resnet_throughput,
    resnet_profile,
    molecules,
    pretraining,
)


def table(rows: list[Row]) -> str:
    lines = ["| check | result | status | detail |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.check} | {r.result} | {r.status} | {r.detail} |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry", action="store_true", help="the same code paths on CPU, tiny sizes")
    parser.add_argument("--data", type=Path, help="a folder holding mnist/ and bbbp/BBBP.csv (../shared/data)")
    parser.add_argument(
        "--only",
        type=lambda text: [name.strip() for name in text.split(",") if name.strip()],
        metavar="CHECKS",
        help="run these checks alone, comma-separated: backend_and_devices, gpu_against_cpu, precision, "
        "mnist, fast_path_sync, resnet_throughput, resnet_profile, molecules, pretraining",
    )
    parser.add_argument("--out", type=Path, help="a folder for the files a check leaves (the step profiles' tables)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.only or () if name not in {step.__name__ for step in CHECKS}]
    if unknown:
        parser.error(
            f"--only: no check named {', '.join(unknown)}; the checks: {', '.join(s.__name__ for s in CHECKS)}"
        )
    args.data = args.data.resolve() if args.data else None  # the runs start in a folder of their own
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    import torch

    name = "dry run on CPU" if args.dry else (torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")
    print(f"{date.today()}: {name}; {platform.machine()}, torch {torch.__version__}\n", flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = Runs(args.dry, args.data, Path(tmp), args.out.resolve() if args.out else None)
        for step in (s for s in CHECKS if not args.only or s.__name__ in args.only):
            try:
                for row in step(runs):  # each row printed when it is made: a run cut short keeps them
                    rows.append(row)
                    print(table([row]).splitlines()[-1], flush=True)
            except Exception as exc:  # a broken check is a row, and the others still run
                rows.append(Row(step.__name__, "error", "FAIL", f"{type(exc).__name__}: {exc}"[:200]))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    print("\n" + table(rows))
    return 1 if any(r.status == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
