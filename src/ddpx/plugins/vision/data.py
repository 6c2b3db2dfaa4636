"""Building the vision tasks' splits on every rank.

Held-out is the official test set; dev is a stratified ``dev_fraction`` of the official training
set (``random_state`` = ``train.seed``); the rest trains. ``dataset.loader``: ``fast`` keeps each
split as a uint8 tensor on the training device (see :mod:`.fast_path`), ``torchvision`` uses
per-sample transforms in a DataLoader, ``auto`` takes the fast path when the images fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ddpx.api import DataRequest, TaskData, UserError
from ddpx.plugins.vision.classic_path import TransformedImages, transform_pipeline
from ddpx.plugins.vision.fast_path import DeviceImages

FAST_PATH_SHARE = 0.25  # at most this share of the device's free memory (or of RAM) for images


@dataclass(frozen=True)
class ImageSpec:
    mean: Sequence[float]
    std: Sequence[float]
    size: int
    crop_padding: int  # training augmentation; 0 for none
    flip: bool


def stratified_dev_split(targets: torch.Tensor, fraction: float, seed: int, source: str = "the training set"):
    from sklearn.model_selection import train_test_split

    from ddpx.plugins.vision.file_checks import check_dev_split

    labels, counts = targets.unique(return_counts=True)
    check_dev_split(dict(zip(labels.tolist(), counts.tolist())), fraction, source)
    index = torch.arange(len(targets)).numpy()
    try:
        train, dev = train_test_split(index, test_size=fraction, stratify=targets.numpy(), random_state=seed)
    except ValueError as exc:
        raise UserError(
            f"cannot hold out a stratified dev split of {fraction} ({exc}); change dataset.dev_fraction."
        ) from None
    return torch.as_tensor(train), torch.as_tensor(dev)


def _free_bytes(device: torch.device | None) -> int:
    if device is not None and device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free
    try:
        import os

        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def choose_loader(requested: str, nbytes: int, device: torch.device | None, log) -> str:
    if requested != "auto":
        return requested
    budget = FAST_PATH_SHARE * _free_bytes(device)
    if nbytes <= budget:
        return "fast"
    log(
        f"the images ({nbytes / 2**20:.0f} MiB) do not fit the fast path's budget ({budget / 2**20:.0f} MiB); "
        "using torchvision's DataLoader path (dataset.loader=torchvision)"
    )
    return "torchvision"


def check_targets(targets: torch.Tensor, num_classes: int, what: str) -> None:
    """Every label a class of the task: one outside would stop training with an index error."""
    if len(targets) and not (int(targets.min()) >= 0 and int(targets.max()) < num_classes):
        bad = sorted({int(t) for t in targets[(targets < 0) | (targets >= num_classes)].unique()})
        raise UserError(
            f"the {what} holds label(s) {', '.join(map(str, bad[:5]))}, outside the task's {num_classes} "
            f"classes (0 to {num_classes - 1}). Replace its files with the dataset's own (dataset.download"
            "=true fetches them)."
        )


def build_image_splits(
    request: DataRequest, train_set, test_set, spec: ImageSpec, info: dict, source: str | None = None
) -> TaskData:
    """``source``: where the images came from (default: the task's data folder)."""
    (train_images, train_targets), (test_images, test_targets) = train_set, test_set
    from ddpx.plugins.vision.sources import dataset_root

    source = source or str(dataset_root(request.params))
    for targets, split in ((train_targets, "training"), (test_targets, "test")):
        check_targets(targets, info["num_classes"], f"{split} set in {source}")
    train_idx, dev_idx = stratified_dev_split(
        train_targets, request.params["dev_fraction"], request.seed, f"the training set in {source}"
    )
    splits = {
        "train": (train_images[train_idx], train_targets[train_idx], True),
        "dev": (train_images[dev_idx], train_targets[dev_idx], False),
        "heldout": (test_images, test_targets, False),
    }
    nbytes = sum(images.numel() for images, _, _ in splits.values())
    loader = choose_loader(request.params["loader"], nbytes, request.device, request.log)
    augment = request.params.get("augment", True)
    made = {}
    for name, (images, targets, is_train) in splits.items():
        crop, flip = (spec.crop_padding, spec.flip) if (is_train and augment) else (0, False)
        if loader == "fast":
            made[name] = DeviceImages(
                images, targets, spec.mean, spec.std, crop_padding=crop, flip=flip, device=request.device
            )
        else:
            made[name] = TransformedImages(
                images, targets, transform_pipeline(spec.mean, spec.std, crop_padding=crop, flip=flip, size=spec.size)
            )
    return TaskData(
        train=made["train"],
        dev=made["dev"],
        heldout=made["heldout"],
        info={**info, "loader": loader},
        source=source,
    )
