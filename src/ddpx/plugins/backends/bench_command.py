"""``ddpx bench``: measurements a user runs on their own machines (``collectives`` for now), added
to ``ddpx`` by the backends plugin: it times the collectives of the backends that plugin provides."""

from __future__ import annotations

import json

import click

from ddpx.api import UserError, console

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "G": 1 << 30, "GB": 1 << 30}


def parse_bytes(text: str) -> int:
    """``4096``, ``64K``, ``16M``, ``1G`` (powers of two)."""
    number = text.strip().upper().rstrip("IB") if text.strip().upper().endswith("IB") else text.strip().upper()
    digits = number.rstrip("KMGB")
    unit = number[len(digits) :]
    if not digits.isdigit() or unit not in _UNITS:
        raise UserError(f"'{text}' is not a size: write bytes as 4096, 64K, 16M or 1G.")
    return int(digits) * _UNITS[unit]


def _human(size: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


@click.group("bench")
def bench_command() -> None:
    """Measure this machine: collective bandwidth (`ddpx bench collectives`)."""


@bench_command.command(
    "collectives",
    epilog="""\b
Examples:
  ddpx bench collectives        # gloo on CPU, or NCCL over every GPU
  ddpx bench collectives --nproc 8 --backend nccl --max-bytes 1G
  ddpx bench collectives --op all_reduce --json
""",
)
@click.option("--backend", default="auto", show_default=True, help="auto (nccl with GPUs, else gloo), nccl or gloo.")
@click.option("--nproc", type=int, default=None, help="Ranks.  [default: one per GPU, or 2 without GPUs]")
@click.option(
    "--op",
    "ops",
    multiple=True,
    type=click.Choice(["all_reduce", "all_gather", "broadcast"]),
    help="Operation to time (repeatable).  [default: all three]",
)
@click.option("--min-bytes", default="4K", show_default=True, help="Smallest message.")
@click.option("--max-bytes", default="16M", show_default=True, help="Largest message (sizes grow 4x).")
@click.option("--iters", type=int, default=20, show_default=True, help="Timed iterations per size.")
@click.option("--warmup", type=int, default=5, show_default=True, help="Untimed iterations first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def collectives_command(backend, nproc, ops, min_bytes, max_bytes, iters, warmup, as_json) -> None:
    """All-reduce, all-gather and broadcast bandwidth for a range of message sizes (like nccl-tests).

    Bus bandwidth (busbw) is comparable with the interconnect's rated speed: check a new
    cluster's links, or see what the gloo backend gets on CPU.
    """
    from ddpx.api import local_gpu_count
    from ddpx.plugins.backends.collectives import OPERATIONS, message_sizes, run_collectives

    gpus = local_gpu_count()
    backend = ("nccl" if gpus else "gloo") if backend == "auto" else backend
    if backend not in ("nccl", "gloo"):
        raise UserError(f"--backend must be auto, nccl or gloo, not '{backend}'.")
    nproc = (gpus or 2) if nproc is None else nproc  # one rank per GPU, or 2 ranks without one
    if nproc < 2:
        raise UserError(f"--nproc must be at least 2 for a collective to move data, not {nproc}.")
    if backend == "nccl" and nproc > gpus:
        raise UserError(
            f"--backend nccl needs one GPU per rank: {nproc} ranks, {gpus} GPU(s) here. "
            "Use --nproc to match the GPUs, or --backend gloo."
        )
    if iters < 1 or warmup < 0:
        raise UserError("--iters must be at least 1 and --warmup 0 or more.")
    low, high = parse_bytes(min_bytes), parse_bytes(max_bytes)
    if low > high:
        raise UserError(f"--min-bytes ({min_bytes}) is larger than --max-bytes ({max_bytes}).")
    sizes = message_sizes(low, high)
    results = run_collectives(backend, nproc, sizes, list(ops or OPERATIONS), iters, warmup)
    if as_json:
        from dataclasses import asdict

        click.echo(json.dumps({"backend": backend, "nproc": nproc, "results": [asdict(r) for r in results]}, indent=2))
        return
    console().print(results_table(backend, nproc, iters, results))


def results_table(backend: str, nproc: int, iters: int, results):
    """The timings as a rich table, one row per operation and size."""
    from rich.table import Table

    table = Table(title=f"collectives: {backend}, {nproc} ranks, {iters} iterations", title_justify="left")
    for column in ("op", "size", "time (us)", "algbw (GB/s)", "busbw (GB/s)"):
        table.add_column(column, justify="left" if column == "op" else "right")
    for r in results:
        table.add_row(r.op, _human(r.size_bytes), f"{r.time_us:,.1f}", f"{r.algbw_gbps:.3f}", f"{r.busbw_gbps:.3f}")
    return table
