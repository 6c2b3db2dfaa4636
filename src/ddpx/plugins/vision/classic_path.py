"""The classic path (``dataset.loader=torchvision``): per-sample torchvision transforms in a
DataLoader, as the seed tutorials do it."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.utils.data import Dataset


def transform_pipeline(
    mean: Sequence[float], std: Sequence[float], *, crop_padding: int = 0, flip: bool = False, size: int | None = None
):
    from torchvision import transforms

    steps = []
    if crop_padding:
        steps.append(transforms.RandomCrop(size, padding=crop_padding))
    if flip:
        steps.append(transforms.RandomHorizontalFlip())
    steps += [transforms.ToTensor(), transforms.Normalize(mean, std)]
    return transforms.Compose(steps)


class TransformedImages(Dataset):
    """uint8 ``(N, C, H, W)`` images served one by one as PIL images through ``transform``."""

    def __init__(self, images: torch.Tensor, targets: torch.Tensor, transform):
        self.images, self.targets, self.transform = images, targets, transform

    def __len__(self) -> int:
        return self.images.shape[0]

    def __getitem__(self, i: int):
        from torchvision.transforms.functional import to_pil_image

        return self.transform(to_pil_image(self.images[i])), self.targets[i]
