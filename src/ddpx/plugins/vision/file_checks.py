"""Before launch: are the image files on disk whole, and in the format torchvision reads?

MNIST's raw files are IDX: a magic number naming the element type and rank, the dimensions,
then exactly ``prod(dims)`` bytes — so a truncated or foreign file is found from its header and
size alone; each image file must hold 28 x 28 images, as many as its label file has labels, and
every label must be a class the task has (0-9: the label files are read, 60 KB). CIFAR-10's
batches are pickles, which begin with the protocol marker ``0x80`` and end with the STOP opcode
``.``: a truncated copy loses its last byte (their labels are checked as the ranks read them,
:mod:`.cifar_files`). No check reads the images themselves, so they cost milliseconds.
"""

from __future__ import annotations

import math
import struct
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from ddpx.api import UserError

IDX_UBYTE = 0x08
FIX = "Delete the folder's files and fetch them again (dataset.download=true), or copy them again from a good source."


def check_idx_file(path: Path, rank: int) -> tuple[int, ...]:
    """``path`` is an unsigned-byte IDX file of ``rank`` dimensions with all its bytes; its dimensions."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        header = fh.read(4 + 4 * rank)
    if len(header) < 4 + 4 * rank or header[0:2] != b"\x00\x00" or header[2] != IDX_UBYTE or header[3] != rank:
        raise UserError(
            f"'{path}' is not an MNIST IDX file (its first bytes are not the IDX header for "
            f"{rank}-d unsigned bytes; is it compressed, or another file?). {FIX}"
        )
    dims = struct.unpack(f">{rank}I", header[4:])
    count = 1
    for dim in dims:
        count *= dim
    expected = 4 + 4 * rank + count
    if size != expected:
        state = "truncated" if size < expected else "longer than its header says"
        raise UserError(
            f"'{path}' is {state}: its header promises {expected} bytes ({' x '.join(map(str, dims))}), "
            f"the file has {size}. {FIX}"
        )
    return dims


def check_mnist_files(raw: Path, num_classes: int = 10, size: int = 28, dev_fraction: float | None = None) -> None:
    """Both MNIST pairs whole, of ``size`` x ``size`` images, one label 0..``num_classes - 1`` each;
    with ``dev_fraction``, enough training images of each class for that stratified dev split."""
    for prefix in ("train", "t10k"):
        images, labels = raw / f"{prefix}-images-idx3-ubyte", raw / f"{prefix}-labels-idx1-ubyte"
        count, rows, cols = check_idx_file(images, 3)
        (label_count,) = check_idx_file(labels, 1)
        if (rows, cols) != (size, size):
            raise UserError(f"'{images}' holds {rows} x {cols} images; MNIST's are {size} x {size}. {FIX}")
        if count != label_count:
            raise UserError(
                f"'{images}' holds {count} images but '{labels}' has {label_count} labels: the two "
                f"files must be a pair. {FIX}"
            )
        counts = Counter(labels.read_bytes()[8:])
        check_labels(labels, counts, num_classes)
        if prefix == "train" and dev_fraction is not None:
            check_dev_split(counts, dev_fraction, f"the training set in {raw}")


def check_labels(path: Path, distinct: Iterable[int], num_classes: int) -> None:
    """Every one of a file's ``distinct`` labels names one of the task's ``num_classes`` classes."""
    bad = sorted(int(label) for label in distinct if not 0 <= int(label) < num_classes)
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (", ..." if len(bad) > 5 else "")
        raise UserError(
            f"'{path}' holds label(s) {shown}, outside the task's {num_classes} classes (0 to "
            f"{num_classes - 1}): it is not this dataset's file, or it was written wrongly. {FIX}"
        )


def check_dev_split(counts: Mapping[int, int], fraction: float, source: str) -> None:
    """A stratified dev split of ``fraction`` can be held out of images with these per-class
    ``counts``: every class has two images (one to train on, one for dev), and the dev split and
    the rest have room for one image of each class (scikit-learn's rules)."""
    n, classes = sum(counts.values()), len(counts)
    dev = math.ceil(fraction * n)
    rare = sorted(label for label, count in counts.items() if count < 2)
    if rare or dev < classes or n - dev < classes:
        problem = (
            f"class(es) {', '.join(map(str, rare[:5]))} have a single image"
            if rare
            else f"it leaves {dev} dev and {n - dev} training images for {classes} classes"
        )
        raise UserError(
            f"{source} holds {n} training images, too few for a stratified dev split of "
            f"dataset.dev_fraction={fraction:g}: {problem}, and each split needs one image of every "
            "class. Use more images (at least two of each class), or a dev_fraction that leaves as many "
            "images as classes on each side."
        )


def check_pickle_file(path: Path) -> None:
    size = path.stat().st_size
    with path.open("rb") as fh:
        first = fh.read(1)
        fh.seek(max(0, size - 1))
        last = fh.read(1)
    if first != b"\x80" or last != b".":
        problem = "empty" if size == 0 else ("truncated" if first == b"\x80" else "not a CIFAR-10 pickle batch")
        raise UserError(f"'{path}' is {problem}. {FIX}")


def check_cifar_files(folder: Path, names: tuple[str, ...]) -> None:
    for name in names:
        check_pickle_file(folder / name)
