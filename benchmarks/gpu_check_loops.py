"""The plain PyTorch loop ``benchmarks/gpu_check.py`` measures ddpx against: the same ResNet-18
(``ddpx.plugins.vision.models.resnet18``, torchvision's), batch, optimizer and precision, on
CIFAR-shaped images already on the device, one process, no framework."""

from __future__ import annotations

import time


def plain_resnet_rate(batch: int, *, steps: int, channels_last: bool, compile_: bool, bf16: bool,
                      warmup: int = 3) -> float:
    """Training images per second of a plain loop, timed after ``warmup`` steps."""
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

    for _ in range(warmup):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return batch * steps / (time.perf_counter() - start)
