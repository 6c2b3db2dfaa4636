"""The checks of the data recipes: MNIST to 99 %, the fast image path never waiting for the GPU,
molecules per second on the GPU against the CPU."""

from __future__ import annotations

import gzip
import importlib.util
from collections.abc import Iterator
from pathlib import Path

from benchmarks.common.environment import use_test_file_writers
from benchmarks.gpu_check.runs import Row, Runs, heldout

MNIST_CHECK = "MNIST: launch to 99.0 % held-out"


def mnist(runs: Runs) -> list[Row]:
    raw = made_mnist(runs.workdir / "made") if runs.dry else published_mnist(runs)
    if raw is None:
        return [Row(MNIST_CHECK, "not run", "SKIP", "no MNIST under --data")]
    root = runs.workdir / "mnist"
    (root / "MNIST" / "raw").mkdir(parents=True, exist_ok=True)
    for f in raw.iterdir():  # the published files are gzipped; torchvision reads them unpacked
        unpacked = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
        (root / "MNIST" / "raw" / f.name.removesuffix(".gz")).write_bytes(unpacked)
    if runs.dry:  # the path walked on a few made images: one epoch, the goal not judged
        run = runs.run("mnist_convnet", [f"dataset.root={root}", "train.max_epochs=1", "train.patience=0"])
        return [Row(MNIST_CHECK, f"{heldout(run):.4f} after 1 epoch", "INFO", "dry: CPU; 400 made images")]
    for epochs in (1, 2, 3, 5):
        run = runs.run("mnist_convnet", [f"dataset.root={root}", f"train.max_epochs={epochs}", "train.patience=0"])
        if heldout(run) >= 0.99:
            return [
                Row(
                    MNIST_CHECK,
                    f"{run.wall_s:.1f} s",
                    "PASS",
                    f"{epochs} epoch(s), held-out {heldout(run):.4f}, mnist_convnet, fast path",
                )
            ]
    return [Row(MNIST_CHECK, f"{heldout(run):.4f} after 5 epochs", "FAIL", "")]


def published_mnist(runs: Runs) -> Path | None:
    """The folder of MNIST's published files under ``--data``, if it is there."""
    if runs.data is None:
        return None
    return next((p for p in (runs.data / "mnist", runs.data / "MNIST" / "raw") if p.is_dir()), None)


def made_mnist(folder: Path) -> Path:
    """300 training and 100 test images in MNIST's own format, gzipped as it is published."""
    use_test_file_writers()
    from image_files import write_mnist

    raw = write_mnist(folder, n_train=300, n_test=100) / "MNIST" / "raw"
    for f in list(raw.iterdir()):
        f.with_name(f.name + ".gz").write_bytes(gzip.compress(f.read_bytes()))
        f.unlink()
    return raw


def fast_path_sync(runs: Runs) -> list[Row]:
    """The fast image path builds a training batch without waiting for the GPU: with CUDA's
    sync debug mode set to error, any copy or read that would block the host raises."""
    import torch

    from ddpx.plugins.vision.fast_path import DeviceImages

    check = "fast image path: a batch without waiting for the GPU"
    if not runs.gpus:
        return [Row(check, "not run", "SKIP", "dry: CPU" if runs.dry else "needs a GPU")]
    device = torch.device("cuda")
    images = torch.randint(0, 256, (1024, 3, 32, 32), dtype=torch.uint8)
    data = DeviceImages(
        images, torch.randint(0, 10, (1024,)), [0.5] * 3, [0.25] * 3, crop_padding=4, flip=True, device=device
    )
    data.get_batch(torch.arange(8), device, train=True)  # the normalisation constants' one copy
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for start in range(0, 1024, 256):
            data.get_batch(torch.arange(start, start + 256), device, train=True)
    except RuntimeError as exc:
        return [Row(check, "waits", "FAIL", str(exc).splitlines()[0][:160])]
    finally:
        torch.cuda.set_sync_debug_mode("default")
    return [Row(check, "no wait in 4 batches", "PASS", "CUDA sync debug mode: error")]


# A dry run walks each row's path, not its speed: the BiLSTM one layer of 32 (its three of 128 take most
# of the dry run's time on a busy 2-core machine).
DRY_KEYS = {"bbbp_rnn": ["model.num_layers=1", "model.d_model=32", "model.embedding_dim=32"]}


def molecules(runs: Runs) -> Iterator[Row]:
    bbbp = (
        next((p for p in (runs.data / "bbbp" / "BBBP.csv", runs.data / "BBBP.csv") if p.is_file()), None)
        if runs.data
        else None
    )
    if bbbp is None:
        use_test_file_writers()
        from smiles_files import write_smiles_csv

        bbbp = write_smiles_csv(runs.workdir / "mols.csv", n=200)
    if importlib.util.find_spec("rdkit") is None:  # both recipes read SMILES with RDKit
        yield Row("molecules/s", "not run", "SKIP", "needs RDKit: pip install 'ddpx[chem]'")
        return
    for recipe in ("bbbp_rnn", "bbbp_dmpnn"):
        keys = [
            f"dataset.path={bbbp}",
            "dataset.split=random",
            f"train.max_epochs={1 if runs.dry else 2}",
            "train.patience=0",
            *(DRY_KEYS.get(recipe, []) if runs.dry else []),
        ]
        try:
            here = runs.run(recipe, keys, nproc=1)  # one rank each: a dry run too
            cpu = runs.on_cpu(recipe, keys, nproc=1) if runs.gpus else None  # no GPU: nothing to time against
        except RuntimeError as exc:  # a run that failed: this row fails, the next still runs
            yield Row(f"{recipe}: molecules/s", "failed", "FAIL", str(exc)[:120])
            continue
        yield molecules_row(recipe, here, cpu, f"{runs.where}; {bbbp.name}")


def molecules_row(recipe: str, here, cpu, where: str) -> Row:
    """The GPU's molecules per second against one CPU rank's: it passes when the GPU is faster.
    Without a GPU (a dry run, or none found) the one run walks the path, and nothing is judged."""
    fast = here.epochs[-1]["samples_per_s"]
    if cpu is None:
        return Row(f"{recipe}: molecules/s", f"{fast:,.0f} on 1 CPU rank", "INFO", where)
    slow = cpu.epochs[-1]["samples_per_s"]
    return Row(
        f"{recipe}: molecules/s",
        f"{fast:,.0f} vs {slow:,.0f} on 1 CPU rank ({fast / slow:.1f}x)",
        "PASS" if fast > slow else "FAIL",
        where,
    )
