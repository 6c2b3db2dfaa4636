"""Framework overhead: ddpx against a plain hand-written DDP loop, and the ``ddp`` wrapper
against the hand-made ``allreduce`` one — training throughput and loss curve, side by side.

    python benchmarks/framework_overhead/run.py [--epochs 3] [--rounds 8] [--nproc 2] [--train-size 40000]
                                                [--backend gloo|nccl] [--wrappers ddp,allreduce]
                                                [--save rounds.json]
    python benchmarks/framework_overhead/run.py --pool rounds.json more-rounds.json

Every variant is launched with torchrun on the same machine, same data, model, seeds, batch and
world size: the plain loop (``benchmarks/common/plain_ddp_mlp.py``), ``ddpx recipe mlp_synthetic`` with
``train.wrapper=ddp`` and with ``train.wrapper=allreduce``. The rounds interleave the variants,
each round in a rotated order, so that drift in the machine's speed and any advantage of going
first or last hit all of them alike. Reported: the median training
samples/s over the epochs after the first (warm-up) across rounds, its ratio to the plain loop,
the median of the per-round ratios (each variant against the plain loop of the same round) and
their mean with its standard error, and each epoch's training loss. On a small shared machine epoch rates vary by ±10 %: the spread is
printed with the median; longer epochs (``--train-size``) and more rounds narrow it.

``--backend nccl`` runs every variant on one GPU per rank; with several GPUs it adds
``train.wrapper=dp``: one process over ``--nproc`` GPUs with the same global batch (its sampler
order, and so its loss curve, differs from the others'). ``--wrappers ddp`` leaves the slower
hand-made wrapper out, which fits about twice the rounds into the same time when only ddpx
against the plain loop is in question. ``--save`` writes every epoch's rate, round by round, as
JSON after each round, so that separate runs, or one cut short, can be pooled:
``--pool a.json b.json`` reports saved runs of the same settings together as one.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.common.environment import PLAIN_DDP_MLP


def run_plain(epochs: int, nproc: int, folder: Path, train_size: int, backend: str) -> list[dict]:
    out = folder / "plain.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={nproc}",
            f"--log-dir={folder / 'torchrun-logs'}",
            str(PLAIN_DDP_MLP),
            "--epochs",
            str(epochs),
            "--train-size",
            str(train_size),
            "--backend",
            backend,
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return json.loads(out.read_text())


def run_ddpx(epochs: int, nproc: int, folder: Path, train_size: int, backend: str, wrapper: str) -> list[dict]:
    runs = folder / f"runs-{wrapper}"
    batch = []
    if wrapper == "dp":  # one process drives every GPU: the same global batch as nproc DDP ranks
        batch, nproc = [f"train.batch_size={64 * nproc}"], 1
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ddpx",
            "recipe",
            "mlp_synthetic",
            "--launcher",
            "torchrun",
            "--nproc",
            str(nproc),
            "--backend",
            backend,
            "--tracking",
            "none",
            "--run-dir",
            str(runs),
            f"train.max_epochs={epochs}",
            "train.patience=0",
            f"train.wrapper={wrapper}",
            f"dataset.train_size={train_size}",
            *batch,
        ],
        check=True,
        capture_output=True,
    )
    (run_dir,) = runs.iterdir()
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line]
    shutil.rmtree(runs)
    return records


def middle_half(values: list[float]) -> tuple[float, float]:
    """The first and third quartiles (both the value itself when there is only one)."""
    if len(values) < 2:
        return values[0], values[0]
    low, _, high = statistics.quantiles(values, n=4)
    return low, high


PLAIN = "plain PyTorch DDP loop"


def measure(args: argparse.Namespace) -> dict:
    """Run the rounds; return every epoch's rate per variant and round, and each variant's loss curve."""
    import torch  # here, so that reporting saved runs (--pool) starts at once

    size = dict(epochs=args.epochs, nproc=args.nproc, train_size=args.train_size, backend=args.backend)
    wrappers = [w for w in args.wrappers.split(",") if w]
    if args.backend == "nccl" and args.nproc > 1 and torch.cuda.device_count() >= args.nproc and "dp" not in wrappers:
        wrappers.append("dp")
    variants = {PLAIN: lambda f: run_plain(folder=f, **size)}
    for wrapper in wrappers:
        label = f"ddpx, train.wrapper={wrapper}" + (" (one process)" if wrapper == "dp" else "")
        variants[label] = lambda f, wrapper=wrapper: run_ddpx(folder=f, wrapper=wrapper, **size)
    where = torch.cuda.get_device_name() if args.backend == "nccl" else f"{torch.get_num_threads()} CPU threads"
    settings = {
        "machine": f"{platform.machine()}, {where}; torch {torch.__version__}",
        "backend": args.backend,
        "nproc": args.nproc,
        "train_size": args.train_size,
        "epochs": args.epochs,
    }
    run = {"settings": settings, "rates": {name: [] for name in variants}, "losses": {}}
    names = list(variants)
    with tempfile.TemporaryDirectory() as tmp:
        for round_index in range(args.rounds):
            shift = round_index % len(names)  # each variant takes each place in the order in turn
            for name in names[shift:] + names[:shift]:
                records = variants[name](Path(tmp))
                run["rates"][name].append([r["samples_per_s"] for r in records[1:]])
                run["losses"][name] = [r["train_loss"] for r in records]
            if args.save:  # after every round, so that a run cut short keeps what it measured
                args.save.write_text(json.dumps(run, indent=1))
    return run


def pool(paths: list[Path]) -> dict:
    """Saved runs of the same settings as one run: their rounds one after the other."""
    try:
        runs = [json.loads(path.read_text()) for path in paths]
    except (OSError, ValueError) as exc:
        raise SystemExit(f"cannot read a saved run: {exc}. Pass files written by --save.") from None
    for path, other in zip(paths[1:], runs[1:]):
        if other["settings"] != runs[0]["settings"]:
            raise SystemExit(
                f"{path} was measured with other settings than {paths[0]}: "
                f"{other['settings']} against {runs[0]['settings']}"
            )
    names = [name for name in runs[0]["rates"] if all(name in other["rates"] for other in runs)]
    rates = {name: [rounds for run in runs for rounds in run["rates"][name]] for name in names}
    return {"settings": runs[0]["settings"], "rates": rates, "losses": runs[-1]["losses"]}


def report(run: dict) -> None:
    settings, rates = run["settings"], run["rates"]
    print(
        f"machine: {settings['machine']}; {settings['backend']}, {settings['nproc']} ranks; "
        "mlp_synthetic (4 x 256 MLP, batch 64 per rank); "
        f"{settings['train_size']} training samples; {settings['epochs']} epochs x {len(rates[PLAIN])} rounds"
    )
    base = statistics.median(rate for rounds in rates[PLAIN] for rate in rounds)
    plain_rounds = [statistics.median(rounds) for rounds in rates[PLAIN]]
    print(
        "\n| variant | samples/s (median) | middle half of the epochs | vs plain | vs plain, per round (median) "
        "| middle half of the rounds | per round, mean ± standard error |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, by_round in rates.items():
        values = [rate for rounds in by_round for rate in rounds]
        median = statistics.median(values)
        low, high = middle_half(values)
        paired = [statistics.median(rounds) / plain for rounds, plain in zip(by_round, plain_rounds)]
        paired_low, paired_high = middle_half(paired)
        error = statistics.stdev(paired) / len(paired) ** 0.5 if len(paired) > 1 else float("nan")
        print(
            f"| {name} | {median:,.0f} | {low:,.0f} – {high:,.0f} | {median / base:.3f} | "
            f"{statistics.median(paired):.3f} | {paired_low:.3f} – {paired_high:.3f} | "
            f"{statistics.fmean(paired):.3f} ± {error:.3f} |"
        )
    losses = run["losses"]
    print("\n| epoch | " + " | ".join(losses) + " |")
    print("| --- |" + " --- |" * len(losses))
    for epoch in range(settings["epochs"]):
        print(f"| {epoch + 1} | " + " | ".join(f"{losses[n][epoch]:.6f}" for n in losses) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--train-size", type=int, default=40000, help="training samples (the epoch's length)")
    parser.add_argument("--backend", default="gloo", choices=("gloo", "nccl"), help="nccl: one GPU per rank")
    parser.add_argument(
        "--wrappers",
        default="ddp,allreduce",
        help="comma-separated ddpx wrappers to run beside the plain loop (dp is added on several GPUs)",
    )
    parser.add_argument("--save", type=Path, help="write every epoch's rate, round by round, to this JSON file")
    parser.add_argument(
        "--pool",
        type=Path,
        nargs="+",
        metavar="SAVED",
        help="measure nothing: report runs saved with --save together, as one",
    )
    args = parser.parse_args()
    report(pool(args.pool) if args.pool else measure(args))


if __name__ == "__main__":
    main()
