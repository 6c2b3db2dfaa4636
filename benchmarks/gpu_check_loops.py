"""The plain PyTorch loop ``benchmarks/gpu_check.py`` measures ddpx against: the same ResNet-18
(``ddpx.plugins.vision.models.resnet18``, torchvision's) wrapped in DDP on a world of one, batch,
optimizer and precision, and the same training batches (the fast path's ``DeviceImages``: CIFAR's
uint8 images on the device, random crop with padding 4, horizontal flip, normalisation, a shuffled
order drawn on the host), one process, no framework. What is left between the two is ddpx's own
work per step."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path


def plain_resnet_rates(batch: int, *, stem: str, windows: int, steps: int, channels_last: bool, compile_: bool, bf16: bool,
                       warmup: int = 3) -> list[float]:
    """Training images per second of a plain loop in ``windows`` back-to-back windows of ``steps``
    steps each, timed after ``warmup`` steps (their spread is the machine's noise)."""
    import torch
    import torch.nn.functional as F

    from ddpx.plugins.vision.models import resnet18

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from ddpx.plugins.vision.fast_path import DeviceImages

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    n = 50 * batch
    data = DeviceImages(torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8), torch.randint(0, 10, (n,)),
                        [0.49, 0.48, 0.45], [0.25, 0.24, 0.26], crop_padding=4, flip=True, device=device)
    model = resnet18(10, stem).to(device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    store = Path(tempfile.mkdtemp()) / "store"
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", init_method=f"file://{store}", rank=0,
                            world_size=1)
    wrapped = DistributedDataParallel(model, device_ids=[device.index or 0] if device.type == "cuda" else None)
    step_model = torch.compile(wrapped) if compile_ else wrapped
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
    dist.destroy_process_group()
    return rates
