"""Tiny MNIST and CIFAR-10 files in the exact on-disk formats torchvision reads.

MNIST: the IDX files (big-endian magic 2051 for images, 2049 for labels) in ``ROOT/MNIST/raw``.
CIFAR-10: the pickled ``cifar-10-batches-py`` folder (five training batches, a test batch and
``batches.meta``). Each class is a distinctive pattern plus noise, so a model learns it quickly.
"""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import numpy as np


def class_images(labels: np.ndarray, channels: int, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 60, size=(len(labels), channels, size, size), dtype=np.int64)
    cell = size // 4
    for i, label in enumerate(labels):
        row, col = divmod(int(label) % 16, 4)
        images[i, :, row * cell : (row + 1) * cell, col * cell : (col + 1) * cell] += 180
        images[i, int(label) % channels] += 10 * int(label)
    return np.clip(images, 0, 255).astype(np.uint8)


def write_idx(path: Path, array: np.ndarray) -> None:
    magic = 2051 if array.ndim == 3 else 2049
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


def write_mnist(root: Path, n_train: int = 600, n_test: int = 200, seed: int = 0) -> Path:
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, n, offset in (("train", n_train, 0), ("t10k", n_test, 1)):
        labels = np.arange(n) % 10
        images = class_images(labels, 1, 28, seed + offset)[:, 0]
        write_idx(raw / f"{prefix}-images-idx3-ubyte", images)
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", labels)
    return root


def write_cifar10(root: Path, n_per_batch: int = 100, n_test: int = 200, seed: int = 0) -> Path:
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    batches = [(f"data_batch_{i}", n_per_batch) for i in range(1, 6)] + [("test_batch", n_test)]
    for k, (name, n) in enumerate(batches):
        labels = np.arange(n) % 10
        images = class_images(labels, 3, 32, seed + k)
        entry = {
            "batch_label": name,
            "labels": labels.tolist(),
            "data": images.reshape(n, 3 * 32 * 32),
            "filenames": [f"{name}_{i}.png" for i in range(n)],
        }
        with open(folder / name, "wb") as fh:
            pickle.dump(entry, fh)
    with open(folder / "batches.meta", "wb") as fh:
        pickle.dump({"label_names": names, "num_cases_per_batch": n_per_batch, "num_vis": 3072}, fh)
    return root
