"""``image_folder``: your own labelled images, a folder per class (torchvision's ``ImageFolder`` layout)::

    photos/
        cats/  a.jpg  b.png ...
        dogs/  c.jpeg ...

Images of any size and format torchvision reads (PNG, JPEG, ...) are converted to RGB (or grey,
``dataset.color=gray``) and resized to ``dataset.image_size`` squares. A stratified
``dataset.heldout_fraction`` is held out by a fixed seed (the same held-out images whatever
``train.seed``), then a stratified ``dataset.dev_fraction`` of the rest chooses the epoch (by
``train.seed``, as the other vision tasks). Images are normalised by the training split's own
per-channel mean and standard deviation, kept with the model so ``ddpx predict`` on a folder of
new images normalises them alike and answers class names. The images are decoded once into
memory; where they fit, the fast path keeps them on the training device.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ddpx.api import Param, UserError, listed

HELDOUT_SEED = 0

IMAGE_FOLDER_PARAMS = {
    "path": Param("", "your folder of images (required): one sub-folder per class, its name the class's"),
    "image_size": Param(64, "every image is resized to this many pixels square", minimum=8, maximum=1024),
    "color": Param("rgb", "rgb (3 channels) or gray (1 channel)", choices=("rgb", "gray")),
    "heldout_fraction": Param(0.2, "stratified share held out (a fixed split)", above=0, below=1),
    "dev_fraction": Param(0.1, "stratified share of the rest used for model selection", above=0, below=1),
    "augment": Param(True, "random crop (padding an eighth of the size) and horizontal flip of training images"),
    "loader": Param(
        "auto",
        "fast (uint8 tensor on the device), torchvision (per-sample transforms), or auto (fast when it fits)",
        choices=("auto", "fast", "torchvision"),
    ),
}


def scan(params: Mapping[str, Any]) -> tuple[list[str], list[tuple[str, int]]]:
    """The class names (sorted folder names) and every image with its class; a folder that cannot
    train a classifier is a clear error."""
    from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset

    folder = Path(params["path"]).expanduser()
    if not params["path"]:
        raise UserError("task image_folder needs your folder of images: dataset.path=FOLDER (a sub-folder per class).")
    if not folder.is_dir():
        raise UserError(f"dataset.path '{folder}' is not a folder; give the folder holding one sub-folder per class.")
    try:
        classes, index = find_classes(str(folder))
        samples = make_dataset(str(folder), index, extensions=IMG_EXTENSIONS)
    except FileNotFoundError as exc:
        raise UserError(
            f"folder '{folder}' cannot train an image classifier: {exc}. Put each class's images "
            f"({', '.join(IMG_EXTENSIONS[:4])}, ...) in a sub-folder named after the class."
        ) from None
    if len(classes) < 2:
        raise UserError(
            f"folder '{folder}' has one class ({listed(classes)}); a classifier needs at least two sub-folders of "
            "images, one per class."
        )
    return classes, samples


def read_image(path: str, channels: int, size: int):
    """One image as a uint8 tensor (channels × size × size); an unreadable file is a clear error."""
    import numpy as np
    import torch
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            fitted = image.convert("L" if channels == 1 else "RGB").resize((size, size), Image.BILINEAR)
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        raise UserError(
            f"cannot read the image '{path}' ({exc}). Remove it, or replace it with a PNG or JPEG."
        ) from None
    pixels = np.asarray(fitted, dtype=np.uint8)
    return torch.from_numpy(pixels.reshape(size, size, channels).copy()).permute(2, 0, 1)


def check_image_folder(params: Mapping[str, Any]) -> None:
    """Before launch: the layout, and that every image opens."""
    from PIL import Image, UnidentifiedImageError

    _, samples = scan(params)
    for path, _ in samples:
        try:
            with Image.open(path) as image:
                image.verify()
        except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as exc:
            raise UserError(
                f"cannot read the image '{path}' ({exc}). Remove it, or replace it with a PNG or JPEG."
            ) from None


def channel_stats(images) -> tuple[list[float], list[float]]:
    """Per-channel mean and standard deviation of uint8 images, as fractions of 255."""
    values = images.float().div_(255).transpose(0, 1).reshape(images.shape[1], -1)
    return values.mean(1).tolist(), values.std(1).clamp_min(1e-6).tolist()


def build_image_folder(request):
    import torch

    from ddpx.plugins.vision.data import ImageSpec, build_image_splits, stratified_dev_split

    p = request.params
    classes, samples = scan(p)
    channels, size = (1 if p["color"] == "gray" else 3), p["image_size"]
    request.log(f"reading {len(samples)} images of {len(classes)} classes ({', '.join(classes[:6])}) from {p['path']}")
    images = torch.stack([read_image(path, channels, size) for path, _ in samples])
    targets = torch.tensor([target for _, target in samples])
    rest, heldout = stratified_dev_split(targets, p["heldout_fraction"], HELDOUT_SEED, f"the images in {p['path']}")
    train, _ = stratified_dev_split(targets[rest], p["dev_fraction"], request.seed, f"the images in {p['path']}")
    mean, std = channel_stats(images[rest][train])  # the training split's own statistics
    spec = ImageSpec(mean, std, size=size, crop_padding=size // 8, flip=True)
    info = {"num_classes": len(classes), "in_channels": channels, "image_size": size, "classes": classes}
    return build_image_splits(
        request,
        (images[rest], targets[rest]),
        (images[heldout], targets[heldout]),
        spec,
        {**info, "mean": mean, "std": std},
        source=str(Path(p["path"]).expanduser().resolve()),
    )
