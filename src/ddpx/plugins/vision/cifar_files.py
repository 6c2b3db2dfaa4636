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
IMAGE_BYTES = 3 * 32 * 32
_ARRAY_CALLS = {
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.numeric", "_frombuffer"),
    ("numpy._core.numeric", "_frombuffer"),
    ("_codecs", "encode"),  # how Python 2 pickles (the published files) carry an array's bytes
}


class _BatchUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ARRAY_CALLS:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which a CIFAR-10 batch never holds")
        if module.startswith("numpy.core.") and int(np.__version__.split(".")[0]) >= 2:
            module = "numpy._core." + module[len("numpy.core.") :]
        return super().find_class(module, name)


def read_batch(path: Path) -> dict[str, Any]:
    """One batch file as a dict with text keys; a file that is not one is a :class:`UserError`."""
    try:
        with path.open("rb") as fh:
            entry = _BatchUnpickler(fh, encoding="latin1").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as exc:
        raise UserError(
            f"{path} is not a CIFAR-10 batch ({exc}); it was not loaded. Download CIFAR-10 again with "
            "`ddpx recipe cifar10_resnet18 dataset.download=true`."
        ) from None
    if not isinstance(entry, dict):
        raise UserError(f"{path} is not a CIFAR-10 batch (it holds a {type(entry).__name__}, not a dict).")
    return {(k.decode("latin1") if isinstance(k, bytes) else k): v for k, v in entry.items()}


def read_split(folder: Path, names: tuple[str, ...], num_classes: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images ``(N, 3, 32, 32)`` and int64 labels of the named batches, in order; a batch
    whose images are not 3 x 32 x 32, one per label, or whose labels are not classes
    0..``num_classes - 1`` is a :class:`UserError` naming it."""
    from ddpx.plugins.vision.file_checks import FIX, check_labels

    images, labels = [], []
    for name in names:
        path = folder / name
        data, batch_labels = _arrays(path, read_batch(path))
        if data.ndim != 2 or data.shape[1] != IMAGE_BYTES or data.shape[0] != len(batch_labels):
            raise UserError(
                f"'{path}' holds images of shape {data.shape} and {len(batch_labels)} labels; a CIFAR-10 "
                f"batch holds N rows of {IMAGE_BYTES} bytes (3 x 32 x 32) and N labels. {FIX}"
            )
        check_labels(path, np.unique(batch_labels).tolist(), num_classes)
        images.append(data.reshape(-1, 3, 32, 32))
        labels.append(batch_labels)
    return np.concatenate(images), np.concatenate(labels)


def _arrays(path: Path, entry: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """A batch's ``data`` as uint8 and its labels as int64 (a batch of other contents: UserError)."""
    from ddpx.plugins.vision.file_checks import FIX

    try:
        data = np.asarray(entry.get("data", []), dtype=np.uint8)
        return data, np.asarray(entry.get("labels", entry.get("fine_labels", [])), dtype=np.int64).reshape(-1)
    except (ValueError, TypeError, OverflowError) as exc:
        raise UserError(
            f"'{path}' is not a CIFAR-10 batch: its images or labels are not numbers ({exc}). {FIX}"
        ) from None


def read_classes(folder: Path, num_classes: int = 10) -> list[str]:
    """The class names of ``batches.meta``, one per class."""
    from ddpx.plugins.vision.file_checks import FIX

    names = read_batch(folder / META).get("label_names")
    if not isinstance(names, (list, tuple)) or len(names) != num_classes:
        raise UserError(
            f"'{folder / META}' does not name CIFAR-10's {num_classes} classes (its label_names: "
            f"{str(names)[:80]}). {FIX}"
        )
    return [str(name) for name in names]
