"""Reading CIFAR-10's python batches without letting them run code.

The batches are pickles, and an ordinary unpickler calls whatever a file names. This one admits
only what the format holds — containers, strings, numbers and the numpy calls that rebuild an
array — whatever ``dataset.verify`` says; anything else is refused before it is called.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np

from ddpx.api import UserError

TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
META = "batches.meta"
_ARRAY_CALLS = {
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("_codecs", "encode"),  # how Python 2 pickles (the published files) carry an array's bytes
}


class _BatchUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ARRAY_CALLS:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a CIFAR-10 batch never holds")
        if module.startswith("numpy.core.") and int(np.__version__.split(".")[0]) >= 2:
            module = "numpy._core." + module[len("numpy.core."):]
        return super().find_class(module, name)


def read_batch(path: Path) -> dict[str, Any]:
    """One batch file as a dict with text keys; a file that is not one is a :class:`UserError`."""
    try:
        with path.open("rb") as fh:
            entry = _BatchUnpickler(fh, encoding="latin1").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as exc:
        raise UserError(f"{path} is not a CIFAR-10 batch ({exc}); it was not loaded. Download CIFAR-10 again with "
                        "`ddpx recipe cifar10_resnet18 dataset.download=true`.") from None
    if not isinstance(entry, dict):
        raise UserError(f"{path} is not a CIFAR-10 batch (it holds a {type(entry).__name__}, not a dict).")
    return {(k.decode("latin1") if isinstance(k, bytes) else k): v for k, v in entry.items()}


def read_split(folder: Path, names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images ``(N, 3, 32, 32)`` and int64 labels of the named batches, in order."""
    images, labels = [], []
    for name in names:
        entry = read_batch(folder / name)
        images.append(np.asarray(entry["data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
        labels.extend(int(label) for label in entry.get("labels", entry.get("fine_labels", [])))
    return np.concatenate(images), np.asarray(labels, dtype=np.int64)


def read_classes(folder: Path) -> list[str]:
    return [str(name) for name in read_batch(folder / META)["label_names"]]
