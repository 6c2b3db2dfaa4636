"""Images/s of the vision fast path against torchvision's DataLoader path, and recipe epoch times.

    python benchmarks/vision_throughput/run.py [--mnist ~/.cache/ddpx/data/MNIST/raw] [--cifar-images 10000] [--workers 2]

Part 1 (data path alone, CIFAR-sized images, training augmentation, one process): one pass over
the same uint8 images through ``DeviceImages.get_batch`` and through a DataLoader of per-sample
torchvision transforms. Part 2 (whole recipes, 2 ranks through the real CLI): the epoch time of
``mnist_convnet`` (on the real MNIST files when given) and ``cifar10_resnet18`` (on generated
CIFAR-format files) with each loader. Everything is measured side by side in this one run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from ddpx.plugins.vision import CIFAR_MEAN, CIFAR_STD
from ddpx.plugins.vision.classic_path import TransformedImages, transform_pipeline
from ddpx.plugins.vision.fast_path import DeviceImages

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.common.environment import use_test_file_writers


def data_path_rates(n: int, batch: int, workers: int, device: torch.device) -> dict[str, float]:
    images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8)
    targets = torch.randint(0, 10, (n,))
    fast = DeviceImages(images, targets, CIFAR_MEAN, CIFAR_STD, crop_padding=4, flip=True, device=device)
    start = time.perf_counter()
    for idx in torch.randperm(n).split(batch):
        x, _ = fast.get_batch(idx, device, train=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    fast_rate = n / (time.perf_counter() - start)

    classic = TransformedImages(
        images, targets, transform_pipeline(CIFAR_MEAN, CIFAR_STD, crop_padding=4, flip=True, size=32)
    )
    loader = DataLoader(classic, batch_size=batch, shuffle=True, num_workers=workers, pin_memory=device.type == "cuda")
    start = time.perf_counter()
    for x, _ in loader:
        x = x.to(device, non_blocking=True)
    if device.type == "cuda":
        torch.cuda.synchronize()
    classic_rate = n / (time.perf_counter() - start)
    return {"fast": fast_rate, "torchvision": classic_rate}


def recipe_epoch(recipe: str, overrides: list[str], workdir: Path) -> float:
    cmd = [
        sys.executable,
        "-m",
        "ddpx",
        "recipe",
        recipe,
        "--nproc",
        "2",
        "--tracking",
        "none",
        "train.max_epochs=1",
        *overrides,
    ]
    subprocess.run(cmd, cwd=workdir, check=True, stdout=subprocess.DEVNULL)
    run_dir = max((workdir / "ddpx-runs").iterdir(), key=lambda p: p.stat().st_mtime)
    return json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[0])["epoch_s"]


MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def copy_mnist(source: Path, raw: Path) -> None:
    """The four MNIST files, uncompressed, where torchvision reads them (a downloaded data folder
    holds them plain; a mirror's copy, gzip-compressed)."""
    raw.mkdir(parents=True)
    for name in MNIST_FILES:
        plain, packed = source / name, source / f"{name}.gz"
        if not plain.is_file() and not packed.is_file():
            raise SystemExit(f"--mnist {source}: {name} is missing (plain or .gz)")
        with open(plain, "rb") if plain.is_file() else gzip.open(packed) as src, open(raw / name, "wb") as dst:
            shutil.copyfileobj(src, dst)


def print_data_path_rates(args: argparse.Namespace, device: torch.device) -> None:
    """Part 1: the data path alone."""
    rates = data_path_rates(n=max(args.cifar_images, 5000), batch=args.batch, workers=args.workers, device=device)
    print("| data path (CIFAR-sized, crop+flip+normalise) | images/s |")
    print("| --- | --- |")
    print(f"| fast path (`dataset.loader=fast`) | {rates['fast']:,.0f} |")
    print(
        f"| torchvision DataLoader, {args.workers} workers (`dataset.loader=torchvision`) | {rates['torchvision']:,.0f} |"
    )
    print(f"| speed-up | {rates['fast'] / rates['torchvision']:.1f}x |\n")


def recipe_epochs(args: argparse.Namespace, tmp: Path) -> list[tuple[str, str, float]]:
    """Part 2: ``(recipe, loader, epoch seconds)`` of each recipe with each loader."""
    use_test_file_writers()
    from image_files import write_cifar10

    rows = []
    if args.mnist:
        copy_mnist(args.mnist, tmp / "mnist" / "MNIST" / "raw")
        for loader in ("fast", "torchvision"):
            rows.append(
                (
                    "mnist_convnet (real MNIST, 54 000 training images)",
                    loader,
                    recipe_epoch(
                        "mnist_convnet",
                        [
                            f"dataset.root={tmp / 'mnist'}",
                            f"dataset.loader={loader}",
                            f"train.num_workers={0 if loader == 'fast' else 1}",
                        ],
                        tmp,
                    ),
                )
            )
    write_cifar10(tmp / "cifar", n_per_batch=args.cifar_images // 5, n_test=1000)
    for loader in ("fast", "torchvision"):
        rows.append(
            (
                f"cifar10_resnet18 (generated, {int(args.cifar_images * 0.9):,} training images)",
                loader,
                recipe_epoch(
                    "cifar10_resnet18",
                    [
                        f"dataset.root={tmp / 'cifar'}",
                        "dataset.verify=false",
                        f"dataset.loader={loader}",
                        f"train.num_workers={0 if loader == 'fast' else 1}",
                    ],
                    tmp,
                ),
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mnist", type=Path, help="folder with the four MNIST *-ubyte files (plain or .gz)")
    parser.add_argument("--cifar-images", type=int, default=10000, help="training images per generated CIFAR copy")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers for the torchvision path")
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = (
        torch.cuda.get_device_name() if device.type == "cuda" else f"{platform.processor() or platform.machine()} CPU"
    )
    print(f"machine: {name}, {torch.get_num_threads()} threads, torch {torch.__version__}\n")
    print_data_path_rates(args, device)
    with tempfile.TemporaryDirectory() as tmp:
        rows = recipe_epochs(args, Path(tmp))
    print("| recipe, 2 ranks, 1 epoch | loader | epoch time (s) |")
    print("| --- | --- | --- |")
    for recipe, loader, seconds in rows:
        print(f"| {recipe} | {loader} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
