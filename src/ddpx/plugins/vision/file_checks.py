"""Before launch: are the image files on disk whole, and in the format torchvision reads?

MNIST's raw files are IDX: a magic number naming the element type and rank, the dimensions,
then exactly ``prod(dims)`` bytes — so a truncated or foreign file is found from its header and
size alone. CIFAR-10's batches are pickles, which begin with the protocol marker ``0x80`` and
end with the STOP opcode ``.``: a truncated copy loses its last byte. Neither check reads the
images themselves, so they cost milliseconds.
"""

from __future__ import annotations

import struct
from pathlib import Path

from ddpx.api import UserError

IDX_UBYTE = 0x08
FIX = ("Delete the folder's files and fetch them again (dataset.download=true), or copy them again from a "
       "good source.")


def check_idx_file(path: Path, rank: int) -> None:
    """``path`` is an unsigned-byte IDX file of ``rank`` dimensions with all its bytes."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        header = fh.read(4 + 4 * rank)
    if len(header) < 4 + 4 * rank or header[0:2] != b"\x00\x00" or header[2] != IDX_UBYTE or header[3] != rank:
        raise UserError(f"'{path}' is not an MNIST IDX file (its first bytes are not the IDX header for "
                        f"{rank}-d unsigned bytes; is it compressed, or another file?). {FIX}")
    dims = struct.unpack(f">{rank}I", header[4:])
    count = 1
    for dim in dims:
        count *= dim
    expected = 4 + 4 * rank + count
    if size != expected:
        state = "truncated" if size < expected else "longer than its header says"
        raise UserError(f"'{path}' is {state}: its header promises {expected} bytes ({' x '.join(map(str, dims))}), "
                        f"the file has {size}. {FIX}")


def check_mnist_files(raw: Path) -> None:
    for name in ("train-images-idx3-ubyte", "t10k-images-idx3-ubyte"):
        check_idx_file(raw / name, 3)
    for name in ("train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"):
        check_idx_file(raw / name, 1)


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
