"""The plain PyTorch loop ``benchmarks/gpu_check/run.py`` measures ddpx against: the same ResNet-18
(``ddpx.plugins.vision.models.resnet18``, torchvision's), batch, optimizer and precision, and the
same training batches (the fast path's ``DeviceImages``: CIFAR's uint8 images on the device, random
crop with padding 4, horizontal flip, normalisation, a shuffled order drawn on the host), one
process, no framework. What is left between the two is ddpx's own work per step.

Like ddpx on one rank, the loop joins a process group of one and trains the model itself, not
wrapped in DistributedDataParallel: ddpx leaves a world of one unwrapped
(``ddpx.plugins.wrappers``), and a DDP-wrapped baseline pays what ddpx does not (the reducer's
hooks and bucket copies and an all-reduce every step; under ``torch.compile``, graphs split at
the buckets' edges), which made the plain loop 5–32 % slower than ddpx on the GPU before."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def plain_resnet_rates(
    batch: int,
    *,
    stem: str,
    windows: int,
    steps: int,
    channels_last: bool,
    compile_: bool,
    bf16: bool,
    warmup: int = 3,
    between: Callable[[], T] = lambda: None,
) -> tuple[list[float], T, list[float]]:
    """Training images per second of a plain loop in ``windows`` back-to-back windows of ``steps``
    steps each, timed after ``warmup`` steps (their spread is the machine's noise); then
    ``between()`` runs (ddpx's run, in a process of its own), and as many windows again, on the same
    warm model (a compiled one is compiled once). Returns the rates before, what ``between``
    returned, and the rates after."""
    with plain_resnet_loop(batch, stem=stem, channels_last=channels_last, compile_=compile_, bf16=bf16) as (step, wait):

        def timed_windows() -> list[float]:
            for _ in range(warmup):
                step()
            rates = []
            for _ in range(windows):
                wait()
                start = time.perf_counter()
                for _ in range(steps):
                    step()
                wait()
                rates.append(batch * steps / (time.perf_counter() - start))
            return rates

        before = timed_windows()
        middle = between()
        return before, middle, timed_windows()


def plain_resnet_profile(batch: int, *, stem: str, steps: int, channels_last: bool, bf16: bool, folder: Path) -> Path:
    """The plain loop's steps traced as ddpx's ``train.profile_steps`` traces its own (the same
    warm-up, the same files); returns ``ops.txt``."""
    from ddpx.rank.diagnostics.step_profiler import SKIPPED_STEPS, WARMUP_STEPS, StepProfiler

    with plain_resnet_loop(batch, stem=stem, channels_last=channels_last, compile_=False, bf16=bf16) as (step, wait):
        import torch

        profiler = StepProfiler(
            steps, torch.device("cuda" if torch.cuda.is_available() else "cpu"), folder, report=lambda text: None
        )
        try:
            for _ in range(SKIPPED_STEPS + WARMUP_STEPS + steps):
                step()
                profiler.step()
            wait()
        except BaseException:
            profiler.abandon()
            raise
        profiler.close()
    return folder / "ops.txt"


@contextmanager
def plain_resnet_loop(batch: int, *, stem: str, channels_last: bool, compile_: bool, bf16: bool):
    """``(step, wait)``: one training step of the plain loop, and a wait for the device."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    from ddpx.plugins.vision.fast_path import DeviceImages
    from ddpx.plugins.vision.models import resnet18

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    n = 50 * batch
    data = DeviceImages(
        torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8),
        torch.randint(0, 10, (n,)),
        [0.49, 0.48, 0.45],
        [0.25, 0.24, 0.26],
        crop_padding=4,
        flip=True,
        device=device,
    )
    model = resnet18(10, stem).to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    store = Path(tempfile.mkdtemp()) / "store"
    dist.init_process_group(
        "nccl" if device.type == "cuda" else "gloo", init_method=f"file://{store}", rank=0, world_size=1
    )
    step_model = torch.compile(model) if compile_ else model  # one rank: no DDP wrapper, as ddpx
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-5)
    dtype = torch.bfloat16 if bf16 else None
    order: list[torch.Tensor] = []

    def step() -> None:
        if not order:  # a new epoch: a shuffled order on the host, as a sampler gives it
            order.extend(torch.randperm(n).split(batch))
        images, labels = data.get_batch(order.pop(), device, train=True)
        if channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=dtype, enabled=bf16):
            loss = F.cross_entropy(step_model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def wait() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    try:
        yield step, wait
    finally:
        dist.destroy_process_group()
