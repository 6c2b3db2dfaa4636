"""The ``mlp`` model: ``n_layers`` linear layers with ReLU between them."""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, dim_in: int, n_classes: int, dim_hidden: int, n_layers: int):
        super().__init__()
        widths = [dim_in] + [dim_hidden] * (n_layers - 1) + [n_classes]
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(widths, widths[1:])):
            if i:
                layers.append(nn.ReLU())
            layers.append(nn.Linear(a, b))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
