"""Vision models: the multi-node MNIST tutorial's ConvNet and torchvision's ResNet-18 (two stems)."""

from __future__ import annotations

import torch
from torch import nn


class ConvNet(nn.Module):
    """Two conv blocks (16 and 32 channels, 5x5, batch norm, ReLU, 2x2 max-pool) and a linear head."""

    def __init__(self, num_classes: int = 10, in_channels: int = 1, image_size: int = 28):
        super().__init__()

        def block(cin: int, cout: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(cin, cout, kernel_size=5, padding=2), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2)
            )

        self.features = nn.Sequential(block(in_channels, 16), block(16, 32))
        self.head = nn.Linear(32 * (image_size // 4) ** 2, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


def resnet18(num_classes: int, stem: str) -> nn.Module:
    """torchvision's ResNet-18. ``stem="imagenet"`` keeps its 7x7 stride-2 conv and max-pool;
    ``stem="cifar"`` uses a 3x3 stride-1 conv and no max-pool, which suits 32x32 images."""
    from torchvision.models import resnet18 as tv_resnet18

    model = tv_resnet18(weights=None, num_classes=num_classes)
    if stem == "cifar":
        model.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        model.maxpool = nn.Identity()
    return model
