"""Distributed helpers for the SPMD worker: joining the group, gathering, tearing down.

Every rank joins from the environment its launcher set — ``MASTER_ADDR``, ``MASTER_PORT``,
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` — whichever launcher that was.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from ddpx.contract.errors import UserError
from ddpx.rank.diagnostics.stall import BEACON

REQUIRED_ENV = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")


@dataclass(frozen=True)
class RankEnv:
    """This process's place in the job."""

    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int

    @classmethod
    def from_environ(cls) -> RankEnv:
        missing = [name for name in REQUIRED_ENV if name not in os.environ]
        if missing:
            raise UserError(
                f"the ddpx worker was started without {', '.join(missing)} in its environment. Start it "
                "through a launcher: `ddpx recipe NAME --launcher spawn|torchrun|slurm`."
            )
        return cls(
            rank=int(os.environ["RANK"]),
            world_size=int(os.environ["WORLD_SIZE"]),
            local_rank=int(os.environ["LOCAL_RANK"]),
            master_addr=os.environ["MASTER_ADDR"],
            master_port=int(os.environ["MASTER_PORT"]),
        )

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def device_for(device_type: str, local_rank: int) -> torch.device:
    """``cuda:LOCAL_RANK`` for GPU backends, the CPU otherwise."""
    if device_type == "cuda":
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device(device_type)


def rendezvous_store(env: RankEnv, timeout: timedelta) -> dist.Store:
    """The key-value store the ranks meet in, at ``MASTER_ADDR:MASTER_PORT``.

    When the launcher holds the store (``TORCHELASTIC_USE_AGENT_STORE=True``: torchrun, and
    ddpx's spawn launcher) every rank is a client; otherwise rank 0 hosts it. Keys are scoped by
    the restart attempt (``TORCHELASTIC_RESTART_COUNT``): a store that outlives a torchrun
    restart still holds the dead attempt's addresses, which the new ranks must never read. (Since
    torch 2.4 torchrun's agent of rank 0 hosts this store: it does not outlive rank 0's machine.)
    """
    agent_store = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == str(True)
    store = dist.TCPStore(
        env.master_addr,
        env.master_port,
        env.world_size,
        is_master=not agent_store and env.is_main,
        timeout=timeout,
        wait_for_workers=False,
    )
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return dist.PrefixStore(f"ddpx/attempt_{attempt}/", store)


def loopback_interface() -> str | None:
    """The loopback interface's name (``lo`` on Linux), if this machine has one."""
    import socket

    try:
        return next((name for _, name in socket.if_nameindex() if name.startswith("lo")), None)
    except OSError:
        return None


def keep_gloo_on_loopback(env: RankEnv) -> None:
    """A one-node job whose rendezvous is on loopback: gloo's sockets listen on loopback too,
    not on the interface the host name resolves to (unless ``GLOO_SOCKET_IFNAME`` says otherwise)."""
    import ipaddress

    one_node = os.environ.get("LOCAL_WORLD_SIZE") == str(env.world_size)
    try:
        loopback = env.master_addr == "localhost" or ipaddress.ip_address(env.master_addr).is_loopback
    except ValueError:
        loopback = False
    interface = loopback_interface()
    if one_node and loopback and interface and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = interface


@contextmanager
def process_group(backend: str, env: RankEnv, device: torch.device, timeout_s: float = 1800) -> Iterator[None]:
    """Join the process group from the environment; leave it on every exit path."""
    kwargs: dict[str, Any] = {}
    if device.type == "cuda":
        kwargs["device_id"] = device
    timeout = timedelta(seconds=timeout_s)
    if backend == "gloo":
        keep_gloo_on_loopback(env)
    dist.init_process_group(
        backend=backend,
        store=rendezvous_store(env, timeout),
        rank=env.rank,
        world_size=env.world_size,
        timeout=timeout,
        **kwargs,
    )
    try:
        yield
    except BaseException:
        teardown()  # no barrier: a failed peer would never reach it
        raise
    # Every rank finishes its last collective before any rank leaves; otherwise a fast rank
    # tears its gloo pairs down under a peer that is still receiving.
    BEACON.at("finishing (every rank leaves together)")
    with BEACON.waiting_in("barrier"):
        dist.barrier()
    teardown()


def teardown() -> None:
    """Free what still holds the process group, then destroy it (safe to call twice).

    DDP's reducer sits in reference cycles; left to the interpreter's shutdown, the gloo
    process group it holds is destroyed after Python is half gone and aborts the process
    ("terminate called without an active exception"). Collecting first frees it in time.
    """
    gc.collect()
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    gc.collect()


def barrier() -> None:
    """Wait for every rank (no-op outside a process group)."""
    if dist.is_initialized():
        with BEACON.waiting_in("barrier"):
            dist.barrier()


def all_reduce_sum(values: torch.Tensor) -> torch.Tensor:
    """Sum a tensor over all ranks (returns a new tensor)."""
    values = values.clone()
    if dist.is_initialized():
        with BEACON.waiting_in("all_reduce"):
            dist.all_reduce(values, op=dist.ReduceOp.SUM)
    return values


def all_gather_rows(local: torch.Tensor) -> torch.Tensor:
    """Concatenate every rank's rows in rank order; ranks may hold different numbers of rows.

    Rows are padded to the longest shard for the collective and the padding is cut off again,
    so the result holds exactly the rows the ranks contributed — no duplicates, nothing dropped.
    """
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return local
    world = dist.get_world_size()
    count = torch.tensor([local.shape[0]], device=local.device, dtype=torch.long)
    counts = [torch.zeros_like(count) for _ in range(world)]
    with BEACON.waiting_in("all_gather"):
        dist.all_gather(counts, count)
    sizes = [int(c.item()) for c in counts]
    longest = max(sizes)
    padded = torch.zeros((longest, *local.shape[1:]), dtype=local.dtype, device=local.device)
    padded[: local.shape[0]] = local
    gathered = [torch.empty_like(padded) for _ in range(world)]
    with BEACON.waiting_in("all_gather"):
        dist.all_gather(gathered, padded)
    return torch.cat([rows[:size] for rows, size in zip(gathered, sizes)])


def broadcast_buffers(module: torch.nn.Module) -> None:
    """Rank 0's buffers (a batch norm's running statistics) on every rank. DDP sends them at the
    start of each training forward, so each rank's last forward leaves its own: an evaluation
    with them would score each rank's shard by another model than the one rank 0 exports."""
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return
    with BEACON.waiting_in("broadcast"):
        for buffer in module.buffers():
            dist.broadcast(buffer.data, src=0)


def gather_objects(obj: Any) -> list[Any]:
    """Every rank's picklable ``obj``, in rank order, on every rank."""
    if not dist.is_initialized():
        return [obj]
    gathered: list[Any] = [None] * dist.get_world_size()
    with BEACON.waiting_in("all_gather"):
        dist.all_gather_object(gathered, obj)
    return gathered


def broadcast_object(obj: Any, src: int = 0) -> Any:
    """Send a picklable object from ``src`` to every rank and return it everywhere."""
    if not dist.is_initialized():
        return obj
    box = [obj]
    with BEACON.waiting_in("broadcast"):
        dist.broadcast_object_list(box, src=src)
    return box[0]


def arithmetic_tags(device: torch.device) -> dict[str, str]:
    """What decides a run's last digits besides the recipe, as tracking tags: the torch build,
    the CPU kernels torch chose (``AVX512``, ``AVX2``, ...: the same seed trains to other digits
    under another set; ``ATEN_CPU_CAPABILITY`` picks one), the threads per rank, and the GPU."""
    tags = {
        "ddpx.torch": torch.__version__,
        "ddpx.cpu_kernels": torch.backends.cpu.get_cpu_capability(),
        "ddpx.threads_per_rank": str(torch.get_num_threads()),
    }
    if device.type == "cuda":
        tags["ddpx.gpu"] = torch.cuda.get_device_name(device)
    return tags
