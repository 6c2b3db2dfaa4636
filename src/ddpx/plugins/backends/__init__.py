"""Built-in backends: ``nccl`` (one GPU per local rank) and ``gloo`` (CPU); ``ddpx bench
collectives`` measures what they move between ranks on this machine (:mod:`.bench_command`)."""

from __future__ import annotations

from ddpx.api import BackendSpec, hookimpl, local_gpu_count


def _nccl_unusable(nproc_per_node: int) -> str | None:
    gpus = local_gpu_count()
    if gpus == 0:
        return (
            "nccl needs GPUs and this machine has none. Use --backend gloo (CPU), or --backend auto to choose for you."
        )
    if gpus < nproc_per_node:
        return f"nccl needs one GPU per local rank: --nproc {nproc_per_node} asks for {nproc_per_node}, this machine has {gpus}. Use --nproc {gpus}."
    import torch.distributed as dist

    if not dist.is_nccl_available():
        return "this PyTorch build has no NCCL support. Use --backend gloo."
    return None


def _gloo_unusable(nproc_per_node: int) -> str | None:
    """gloo runs wherever torch does: it is built into every PyTorch release (Linux, macOS,
    Windows). Asking torch would import it in the parent process, a second or two before a
    torchrun or Slurm launch that otherwise never needs it; a source build without gloo stops
    when the ranks join the group, with torch's own "doesn't have Gloo built in"."""
    return None


@hookimpl
def register_backends(register):
    register(BackendSpec("nccl", "NVIDIA NCCL on cuda:LOCAL_RANK, one GPU per rank", "cuda", _nccl_unusable))
    register(BackendSpec("gloo", "gloo on the CPU, for machines without GPUs", "cpu", _gloo_unusable))


@hookimpl(trylast=True)
def ddpx_resolve_backend(nproc_per_node: int, gpus: int) -> str:
    return "nccl" if gpus >= nproc_per_node > 0 else "gloo"


@hookimpl
def register_commands(register):
    from ddpx.plugins.backends.bench_command import bench_command

    register(bench_command)
