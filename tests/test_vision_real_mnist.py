"""Vision on real MNIST, downloaded through torchvision from a local mirror (local rank 0 downloads,
the other rank waits), then one epoch on two ranks. Skipped where the real files are absent."""

import gzip
import hashlib
import json
import shutil

import pytest
from conftest import serve_directory
from real_data import MNIST as REAL_MNIST
from real_data import MNIST_FILES, needs_mnist


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
def test_real_mnist_downloads_on_local_rank_0_only_and_one_epoch_on_two_ranks_reaches_98_percent(job_here, tmp_path):
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
        result = job_here(  # a job that failed raises
            "mnist_convnet",
            f"dataset.root={root}",
            "dataset.download=true",
            f"dataset.mirror={base}/",
            "train.max_epochs=1",
            nproc=2,
            plugins=("ddpx_testplug_mnist_mirror_checksums",),
            env={"DDPX_TEST_MNIST_MD5S": json.dumps(md5s)},
        )
        assert set(one_download) == {f"/{name}" for name in md5s}
        assert sorted(requests) == one_download, "one process downloads, the other rank waits"
    summary = result.summary()
    assert summary["heldout_samples"] == 10000  # the whole official test set, each image once
    assert summary["heldout"]["heldout_accuracy"] >= 0.98
