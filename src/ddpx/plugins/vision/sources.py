"""Reading MNIST (torchvision's loader) and CIFAR-10 (a pickle reader that runs no code), safely across ranks.

``dataset.download=true`` downloads through torchvision on local rank 0 only while the other
ranks wait at a barrier, so no two processes ever write the same files. Missing data without
``download`` is an error with the exact command that fixes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ddpx.api import UserError

if TYPE_CHECKING:  # the checks before launch read this module: they import no torch
    import torch

MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
CIFAR_FILES = (
    "data_batch_1",
    "data_batch_2",
    "data_batch_3",
    "data_batch_4",
    "data_batch_5",
    "test_batch",
    "batches.meta",
)


def dataset_root(params: Mapping[str, Any]) -> Path:
    from ddpx.api import data_root

    return Path(params["root"]).expanduser() if params["root"] else data_root()


def mnist_missing(root: Path) -> list[str]:
    raw = root / "MNIST" / "raw"
    return [name for name in MNIST_FILES if not (raw / name).is_file()]


def cifar_missing(root: Path) -> list[str]:
    folder = root / "cifar-10-batches-py"
    return [name for name in CIFAR_FILES if not (folder / name).is_file()]


def missing_data_error(recipe: str, what: str, root: Path, missing: list[str], place: str) -> UserError:
    return UserError(
        f"{what} is not in {root} (missing {', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}). "
        f"Download it once with `ddpx recipe {recipe} dataset.download=true` (add dataset.root=DIR to choose the "
        f"folder, default $DDPX_DATA_DIR or ~/.cache/ddpx/data), or put the files in {root / place}."
    )


def _download_once(request, fetch: Callable[[Path], None], root: Path) -> None:
    if request.params["download"]:
        if request.is_local_main:
            root.mkdir(parents=True, exist_ok=True)
            fetch(root)
        request.barrier()


def load_mnist(request) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """``((train images, labels), (test images, labels))``: uint8 ``(N, 1, 28, 28)`` and int64."""
    from torchvision.datasets import MNIST

    root = dataset_root(request.params)

    def fetch(folder: Path) -> None:
        if request.params["mirror"]:
            MNIST.mirrors = [request.params["mirror"].rstrip("/") + "/"]
        for train in (True, False):
            try:
                MNIST(str(folder), train=train, download=True)
            except RuntimeError as exc:
                raise UserError(f"downloading MNIST failed: {exc}. Check the network or dataset.mirror.") from None

    _download_once(request, fetch, root)
    missing = mnist_missing(root)
    if missing:
        raise missing_data_error("mnist_convnet", "MNIST", root, missing, "MNIST/raw")
    from ddpx.plugins.vision.file_checks import check_mnist_files

    check_mnist_files(root / "MNIST" / "raw")  # again here: a download, or files changed since the launch
    splits = []
    for train in (True, False):
        ds = MNIST(str(root), train=train, download=False)
        splits.append((ds.data.unsqueeze(1).contiguous(), ds.targets.long()))
    return splits[0], splits[1]


def cifar_integrity_failures(folder: Path) -> list[str]:
    """The CIFAR-10 files whose MD5 differs from the published one (torchvision's list)."""
    from torchvision.datasets import CIFAR10
    from torchvision.datasets.utils import check_integrity

    published = [*CIFAR10.train_list, *CIFAR10.test_list, [CIFAR10.meta["filename"], CIFAR10.meta["md5"]]]
    return [name for name, md5 in published if not check_integrity(str(folder / name), md5)]


def load_cifar10(request):
    """``((train images, labels), (test images, labels), classes)``: uint8 ``(N, 3, 32, 32)``."""
    from torchvision.datasets import CIFAR10

    root = dataset_root(request.params)

    def fetch(folder: Path) -> None:
        for train in (True, False):
            CIFAR10(str(folder), train=train, download=True)

    _download_once(request, fetch, root)
    missing = cifar_missing(root)
    if missing:
        raise missing_data_error("cifar10_resnet18", "CIFAR-10", root, missing, "cifar-10-batches-py")
    from ddpx.plugins.vision.cifar_files import TEST_BATCH, TRAIN_BATCHES, read_classes, read_split

    folder = root / "cifar-10-batches-py"
    failed = cifar_integrity_failures(folder) if request.params["verify"] else []
    if failed:
        raise UserError(
            f"CIFAR-10 in {root} failed the check against the published MD5 sums ({', '.join(failed)}). Download it "
            "again with `ddpx recipe cifar10_resnet18 dataset.download=true`, or set dataset.verify=false for a "
            "re-packed copy."
        )
    import torch

    splits = []
    for names in (TRAIN_BATCHES, (TEST_BATCH,)):
        images, labels = read_split(folder, names)
        splits.append((torch.from_numpy(images), torch.from_numpy(labels)))
    return splits[0], splits[1], read_classes(folder)
