"""The fast image path: decode once into a uint8 tensor on the training device, then crop, flip
and normalise whole batches there.

Per-sample PIL transforms in DataLoader workers are the usual bottleneck for small images. Here
the split is one uint8 tensor (on the GPU, or in pinned memory when the GPU is not where it is
used), and a batch is an index into it followed by batched augmentation — the same distribution
as torchvision's ``RandomCrop(size, padding)`` and ``RandomHorizontalFlip()``: a uniformly random
offset in ``[0, 2 * padding]`` of the zero-padded image, and a flip with probability 1/2.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F


def random_crop_flip(images: torch.Tensor, padding: int, flip: bool) -> torch.Tensor:
    """Batched random crop (zero padding) and horizontal flip of ``(B, C, H, W)`` images."""
    batch, channels, height, width = images.shape
    device = images.device
    if padding:
        padded = F.pad(images, (padding, padding, padding, padding))
        top = torch.randint(0, 2 * padding + 1, (batch,), device=device)
        left = torch.randint(0, 2 * padding + 1, (batch,), device=device)
        rows = (top[:, None] + torch.arange(height, device=device))[:, None, :, None]
        cols = (left[:, None] + torch.arange(width, device=device))[:, None, None, :]
        images = padded[
            torch.arange(batch, device=device)[:, None, None, None],
            torch.arange(channels, device=device)[None, :, None, None],
            rows,
            cols,
        ]
    if flip:
        flipped = torch.rand(batch, device=device) < 0.5
        images = torch.where(flipped[:, None, None, None], images.flip(-1), images)
    return images


class DeviceImages:
    """A split held as uint8 images; ``get_batch`` returns normalised float batches on ``device``."""

    def __init__(
        self,
        images: torch.Tensor,
        targets: torch.Tensor,
        mean: Sequence[float],
        std: Sequence[float],
        *,
        crop_padding: int = 0,
        flip: bool = False,
        device: torch.device | None = None,
    ):
        self.images, self.targets = images, targets
        if device is not None and device.type == "cuda":
            self.images, self.targets = images.to(device), targets.to(device)
        elif torch.cuda.is_available():
            self.images = images.pin_memory()
        shape = (1, -1, 1, 1)
        self.mean = torch.tensor(mean, dtype=torch.float32).view(shape)
        self.std = torch.tensor(std, dtype=torch.float32).view(shape)
        self.crop_padding, self.flip = crop_padding, flip
        self._normalisation: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def __len__(self) -> int:
        return self.images.shape[0]

    def __getitem__(self, i: int):
        x, y = self.get_batch(torch.tensor([i]), self.images.device, train=False)
        return x[0], y[0]

    def get_batch(self, indices: torch.Tensor, device: torch.device, train: bool):
        indices = self._indices_here(indices)
        images = self.images[indices].to(device, non_blocking=True)
        targets = self.targets[indices].to(device, non_blocking=True)
        if train and (self.crop_padding or self.flip):
            images = random_crop_flip(images, self.crop_padding, self.flip)
        mean, std = self._normalisation_on(device)
        return (images.float().div_(255).sub_(mean).div_(std)), targets

    def _indices_here(self, indices: torch.Tensor) -> torch.Tensor:
        """The batch's indices where the images are. A plain copy to the GPU would wait for every
        kernel queued before it (a whole training step), so the host would never run ahead of the
        device; from pinned memory the copy queues behind them instead."""
        if indices.device == self.images.device:
            return indices
        if self.images.is_cuda and indices.device.type == "cpu":
            return indices.pin_memory().to(self.images.device, non_blocking=True)
        return indices.to(self.images.device)

    def _normalisation_on(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """The mean and standard deviation on ``device``, copied there once (each copy to a GPU
        would wait for the queued work, as above)."""
        key = str(device)
        if key not in self._normalisation:
            self._normalisation[key] = (self.mean.to(device), self.std.to(device))
        return self._normalisation[key]

    def nbytes(self) -> int:
        return self.images.numel() * self.images.element_size()
