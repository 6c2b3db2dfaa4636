"""Predicting with a trained image model: a table of images in, a class and its probability out.

The table has a ``path`` column (image files: PNG, JPEG, ... — what ``ddpx predict MODEL FOLDER``
passes for a folder) or an ``image`` column (each image as nested lists or an array of uint8
pixels, height × width for grey images or height × width × channels — what an MLflow model
serving JSON receives). Images are converted to the model's channels and size and normalised as
in training.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ddpx.api import UserError


def from_pixels(value: Any, channels: int) -> torch.Tensor:
    pixels = np.asarray(value, dtype=np.uint8)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.ndim != 3:
        raise UserError(
            f"an image must be height x width (grey) or height x width x channels pixels, not an array "
            f"of shape {pixels.shape}."
        )
    image = torch.from_numpy(pixels.copy()).permute(2, 0, 1)
    if image.shape[0] != channels:
        image = image.float().mean(0, keepdim=True).to(torch.uint8) if channels == 1 else image[:1].expand(3, -1, -1)
    return image


def to_batch(images: list[torch.Tensor], size: int, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    from torchvision.transforms.functional import resize

    fitted = [
        image if image.shape[-2:] == (size, size) else resize(image, [size, size], antialias=True) for image in images
    ]
    batch = torch.stack(fitted).float().div_(255)
    shape = (1, -1, 1, 1)
    return (batch - torch.tensor(mean).view(shape)) / torch.tensor(std).view(shape)


def predict_images(model: torch.nn.Module, info: Mapping[str, Any], table, mean, std):
    """The ``predicted`` class and its ``probability`` for every row's image."""
    columns = list(getattr(table, "columns", []))
    channels = info["in_channels"]
    if "path" in columns:
        from ddpx.plugins.vision.image_folder import read_image  # as training read the files: same answers

        images = [read_image(str(path), channels, info["image_size"]) for path in table["path"]]
    elif "image" in columns:
        images = [from_pixels(value, channels) for value in table["image"]]
    else:
        raise UserError(
            f"this image model reads a 'path' column (image files) or an 'image' column (pixels); the "
            f"input has {', '.join(map(str, columns)) or 'no columns'}. Give `ddpx predict` a folder of images."
        )
    probabilities = torch.softmax(model(to_batch(images, info["image_size"], mean, std)).float(), dim=1)
    confidence, predicted = probabilities.max(dim=1)
    out = table[[c for c in ("path",) if c in columns]].copy()
    out["predicted"] = [info["classes"][i] for i in predicted.tolist()]
    out["probability"] = confidence.numpy()
    return out


def example_images(info: Mapping[str, Any]):
    import pandas as pd

    size, channels = info["image_size"], info["in_channels"]
    shape = (size, size) if channels == 1 else (size, size, channels)
    return pd.DataFrame({"image": [np.zeros(shape, dtype=np.uint8).tolist()]})
