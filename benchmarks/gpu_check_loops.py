"""The plain PyTorch loop ``benchmarks/gpu_check.py`` measures ddpx against: the same ResNet-18
(``ddpx.plugins.vision.models.resnet18``, torchvision's), batch, optimizer and precision, on
CIFAR-shaped images already on the device, one process, no framework."""

from __future__ import annotations

import time


def plain_resnet_rates(batch: int, *, windows: int, steps: int, channels_last: bool, compile_: bool, bf16: bool,
                       warmup: int = 3) -> list[float]:
    """Training images per second of a plain loop in ``windows`` back-to-back windows of ``steps``
    steps each, timed after ``warmup`` steps (their spread is the machine's noise)."""
    import torch
    import torch.nn.functional as F

    from ddpx.plugins.vision.models import resnet18

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = resnet18(10, "imagenet").to(device)
    images = torch.randn(batch, 3, 32, 32, device=device)
    labels = torch.randint(0, 10, (batch,), device=device)
    if channels_last:
        model, images = model.to(memory_format=torch.channels_last), images.to(memory_format=torch.channels_last)
    step_model = torch.compile(model) if compile_ else model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-5)
    dtype = torch.bfloat16 if bf16 else None

    def step() -> None:
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
    return rates
