"""Vision on real MNIST: one epoch on two ranks, and a download through torchvision served from a
local mirror (local rank 0 downloads, the others wait). Skipped where the real files are absent."""

import gzip
import hashlib
import json
import shutil

import pytest

from conftest import serve_directory
from real_data import MNIST_FILES, needs_mnist
from real_data import MNIST as REAL_MNIST


def unpacked_real_mnist(root):
    """The real MNIST files, uncompressed, in the layout torchvision reads."""
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for name in MNIST_FILES:
        plain, packed = REAL_MNIST / name, REAL_MNIST / f"{name}.gz"
        with (open(plain, "rb") if plain.is_file() else gzip.open(packed)) as src, open(raw / name, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return root


def gzipped_real_mnist(folder):
    """The real MNIST files gzip-compressed, as a mirror serves them."""
    folder.mkdir(parents=True)
    for name in MNIST_FILES:
        plain, packed = REAL_MNIST / name, REAL_MNIST / f"{name}.gz"
        if packed.is_file():
            shutil.copyfile(packed, folder / packed.name)
        else:
            with open(plain, "rb") as src, gzip.open(folder / f"{name}.gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
    return folder


@pytest.mark.slow
@needs_mnist
def test_real_mnist_one_epoch_on_two_ranks_reaches_98_percent(run_ddpx, tmp_path):
    root = unpacked_real_mnist(tmp_path / "data")
    result = run_ddpx("recipe", "mnist_convnet", "--nproc", "2", "--tracking", "none", f"dataset.root={root}",
                      "train.max_epochs=1", timeout=600)
    assert result.returncode == 0, result.output
    summary = result.summary()
    assert summary["heldout_samples"] == 10000  # the whole official test set, each image once
    assert summary["heldout"]["heldout_accuracy"] >= 0.98


@pytest.mark.slow
@needs_mnist
def test_download_through_torchvision_happens_on_local_rank_0_only(run_ddpx, tmp_path):
    mirror = gzipped_real_mnist(tmp_path / "mirror")
    md5s = {gz.name: hashlib.md5(gz.read_bytes()).hexdigest() for gz in sorted(mirror.glob("*.gz"))}
    with serve_directory(mirror) as (base, requests):
        # what one process's torchvision download asks of the server (it probes for redirects first)
        from torchvision.datasets import MNIST

        saved = MNIST.mirrors, MNIST.resources
        MNIST.mirrors, MNIST.resources = [f"{base}/"], list(md5s.items())
        try:
            MNIST(str(tmp_path / "baseline"), train=True, download=True)
        finally:
            MNIST.mirrors, MNIST.resources = saved
        one_download = sorted(requests)
        requests.clear()

        root = tmp_path / "downloaded"
        result = run_ddpx("recipe", "mnist_convnet", "--nproc", "3", "--tracking", "none", f"dataset.root={root}",
                          "dataset.download=true", f"dataset.mirror={base}/", "train.max_epochs=0",
                          plugins=("ddpx_testplug_mnist_mirror_checksums",),
                          env={"DDPX_TEST_MNIST_MD5S": json.dumps(md5s)}, timeout=600)
        assert result.returncode == 0, result.output
        assert set(one_download) == {f"/{name}" for name in md5s}
        assert sorted(requests) == one_download, "one process downloads, the other ranks wait"
        assert result.summary()["heldout_samples"] == 10000
