"""``ddpx bench collectives``: all-reduce, all-gather and broadcast bandwidth, nccl-tests style.

Each rank (started with ``torch.multiprocessing`` on this machine) times every operation for a
range of message sizes: warm-up iterations, then ``iters`` timed ones between barriers; the
time reported is the slowest rank's mean. As in nccl-tests, ``size`` is the bytes each rank ends
up with, ``algbw = size / time`` and the bus bandwidth corrects for the algorithm's traffic so
it can be compared with the link's speed: ``busbw = algbw × 2(n−1)/n`` for all-reduce,
``× (n−1)/n`` for all-gather, ``× 1`` for broadcast.
"""

from __future__ import annotations

import socket
import time
from dataclasses import asdict, dataclass
from typing import Any

OPERATIONS = ("all_reduce", "all_gather", "broadcast")


@dataclass(frozen=True)
class BenchResult:
    op: str
    size_bytes: int
    time_us: float
    algbw_gbps: float
    busbw_gbps: float


def bus_factor(op: str, world: int) -> float:
    if op == "all_reduce":
        return 2 * (world - 1) / world
    if op == "all_gather":
        return (world - 1) / world
    return 1.0


def message_sizes(min_bytes: int, max_bytes: int, factor: int = 4) -> list[int]:
    sizes, size = [], max(4, min_bytes)
    while size <= max_bytes:
        sizes.append(size - size % 4)
        size *= factor
    return sizes


def _time_op(op: str, size: int, world: int, device, iters: int, warmup: int) -> float:
    import torch
    import torch.distributed as dist

    numel = size // 4
    if op == "all_gather":  # size is what each rank receives: world pieces of size / world
        piece = torch.ones(max(1, numel // world), device=device)
        out = torch.empty(piece.numel() * world, device=device)
        run = lambda: dist.all_gather_into_tensor(out, piece)  # noqa: E731
    else:
        tensor = torch.ones(numel, device=device)
        run = (lambda: dist.all_reduce(tensor)) if op == "all_reduce" else (lambda: dist.broadcast(tensor, 0))
    for _ in range(warmup):
        run()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        run()
    sync()
    elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    return float(elapsed.item())


def _rank_main(
    rank: int,
    world: int,
    port: int,
    backend: str,
    sizes: list[int],
    ops: list[str],
    iters: int,
    warmup: int,
    results: Any,
) -> None:
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(
        backend,
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        device_id=device if device.type == "cuda" else None,
    )
    try:
        rows = []
        for op in ops:
            for size in sizes:
                seconds = _time_op(op, size, world, device, iters, warmup)
                algbw = size / seconds / 1e9
                rows.append(BenchResult(op, size, seconds * 1e6, algbw, algbw * bus_factor(op, world)))
        if rank == 0:
            results.put([asdict(r) for r in rows])
        dist.barrier()
    finally:
        dist.destroy_process_group()


def run_collectives(
    backend: str, nproc: int, sizes: list[int], ops: list[str], iters: int, warmup: int
) -> list[BenchResult]:
    """Start ``nproc`` ranks on this machine and return rank 0's measurements."""
    import torch.multiprocessing as mp

    from ddpx.contract.cpu_threads import threads_per_rank

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    with threads_per_rank(nproc):
        mp.start_processes(
            _rank_main,
            args=(nproc, port, backend, sizes, ops, iters, warmup, results),
            nprocs=nproc,
            join=True,
            start_method="spawn",
        )
    return [BenchResult(**row) for row in results.get()]
