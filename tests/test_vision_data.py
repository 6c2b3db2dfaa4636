"""Vision data: torchvision's real loaders on tiny files, and a fast path that augments like
torchvision does."""

from pathlib import Path

import numpy as np
import pytest
import torch
from image_files import write_cifar10, write_mnist
from scipy.stats import chi2_contingency, chisquare

from ddpx.contract.errors import UserError
from ddpx.contract.specs import DataRequest
from ddpx.plugins.vision import CIFAR_MEAN, CIFAR_PARAMS, CIFAR_STD, MNIST_PARAMS, build_cifar10, build_mnist
from ddpx.plugins.vision.classic_path import TransformedImages, transform_pipeline
from ddpx.plugins.vision.fast_path import DeviceImages, random_crop_flip

DRAWS = 4000


def request(root: Path, defaults, **params) -> DataRequest:
    values = {key: p.default for key, p in defaults.items()}
    values.update(root=str(root), **params)
    return DataRequest(
        params=values,
        seed=0,
        rank=0,
        world_size=1,
        local_rank=0,
        barrier=lambda: None,
        log=lambda text: None,
        device=torch.device("cpu"),
    )


def position_image() -> torch.Tensor:
    """Channel 0 encodes the row, channel 1 the column, channel 2 marks real (non-padding) pixels."""
    rows = torch.arange(32).view(32, 1).expand(32, 32) * 8
    cols = torch.arange(32).view(1, 32).expand(32, 32) * 8
    return torch.stack([rows, cols, torch.full((32, 32), 255)]).to(torch.uint8)


def offsets_and_flips(images: torch.Tensor) -> list[tuple[int, int, bool]]:
    """Recover (top, left, flipped) of each augmented (B, 3, 32, 32) uint8 image from its centre."""
    out = []
    for image in images.long():
        assert image[2, 16, 16] == 255
        flipped = bool(image[1, 16, 17] < image[1, 16, 16])
        source_row, source_col = int(image[0, 16, 16]) // 8, int(image[1, 16, 16]) // 8
        out.append((source_row - 12, source_col - (11 if flipped else 12), flipped))
    return out


def histogram(draws) -> np.ndarray:
    counts = np.zeros((9, 9, 2))
    for top, left, flipped in draws:
        counts[top, left, int(flipped)] += 1
    return counts.ravel()


def test_fast_path_augmentation_has_torchvision_distribution():
    image = position_image()
    torch.manual_seed(0)
    fast = offsets_and_flips(random_crop_flip(image.expand(DRAWS, -1, -1, -1).clone(), padding=4, flip=True))
    from torchvision.transforms.functional import to_pil_image

    classic_transform = transform_pipeline((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), crop_padding=4, flip=True, size=32)
    pil = to_pil_image(image)
    torch.manual_seed(1)
    classic = offsets_and_flips(
        torch.stack([(classic_transform(pil) * 255).round().to(torch.uint8) for _ in range(DRAWS)])
    )

    fast_counts, classic_counts = histogram(fast), histogram(classic)
    assert fast_counts.min() > 0 and classic_counts.min() > 0  # every offset and flip occurs in both
    assert chisquare(fast_counts).pvalue > 0.001  # uniform over 9 x 9 offsets x 2 flips
    assert chisquare(classic_counts).pvalue > 0.001
    assert chi2_contingency(np.stack([fast_counts, classic_counts])).pvalue > 0.001  # the same distribution
    assert abs(np.mean([f for *_, f in fast]) - 0.5) < 0.03


def test_fast_and_classic_paths_give_the_same_unaugmented_tensors():
    images = torch.randint(0, 256, (6, 3, 32, 32), dtype=torch.uint8)
    targets = torch.arange(6)
    fast = DeviceImages(images, targets, CIFAR_MEAN, CIFAR_STD)
    classic = TransformedImages(images, targets, transform_pipeline(CIFAR_MEAN, CIFAR_STD))
    x, y = fast.get_batch(torch.arange(6), torch.device("cpu"), train=False)
    expected = torch.stack([classic[i][0] for i in range(6)])
    assert torch.allclose(x, expected, atol=1e-6) and torch.equal(y, targets)


@pytest.mark.parametrize("loader", ["fast", "torchvision"])
def test_mnist_idx_files_load_through_torchvision(tmp_path, loader):
    write_mnist(tmp_path, n_train=500, n_test=120)
    data = build_mnist(request(tmp_path, MNIST_PARAMS, loader=loader))
    assert (len(data.train), len(data.dev), len(data.heldout)) == (450, 50, 120)  # held-out = the test files
    assert data.info["loader"] == loader
    dev_labels = [int(data.dev[i][1]) for i in range(len(data.dev))]
    assert sorted(np.bincount(dev_labels).tolist()) == [5] * 10  # stratified
    image, _ = data.heldout[0]
    assert image.shape == (1, 28, 28) and image.dtype == torch.float32


def test_cifar_pickles_load_as_torchvision_reads_them_and_checksums_are_kept_by_default(tmp_path):
    from torchvision.datasets import CIFAR10

    from ddpx.plugins.vision.cifar_files import TRAIN_BATCHES, read_split

    write_cifar10(tmp_path, n_per_batch=40, n_test=60)
    data = build_cifar10(request(tmp_path, CIFAR_PARAMS, verify=False))
    assert (len(data.train) + len(data.dev), len(data.heldout)) == (200, 60)
    assert data.info["classes"][0] == "airplane"
    images, labels = read_split(tmp_path / "cifar-10-batches-py", TRAIN_BATCHES)

    class Unchecked(CIFAR10):  # torchvision's own reader, for the same pixels and labels
        def _check_integrity(self):
            return True

        def _load_meta(self):
            self.classes = []

    reference = Unchecked(str(tmp_path), train=True)
    assert np.array_equal(images.transpose(0, 2, 3, 1), reference.data) and labels.tolist() == reference.targets
    with pytest.raises(UserError, match="failed the check against the published MD5 sums.*dataset.verify=false"):
        build_cifar10(request(tmp_path, CIFAR_PARAMS))  # tiny files do not match the real MD5 sums


def test_a_crafted_cifar_batch_cannot_run_code_even_with_verify_off(tmp_path):
    import pickle

    write_cifar10(tmp_path, n_per_batch=20, n_test=20)
    marker = tmp_path / "code-ran"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (marker,))

    with open(tmp_path / "cifar-10-batches-py" / "data_batch_3", "wb") as fh:
        pickle.dump({"data": Payload(), "labels": [0]}, fh)
    with pytest.raises(UserError, match=r"data_batch_3 is not a CIFAR-10 batch \(it names pathlib.*touch"):
        build_cifar10(request(tmp_path, CIFAR_PARAMS, verify=False))
    assert not marker.exists()


def test_missing_data_names_the_command_that_fixes_it(tmp_path):
    with pytest.raises(UserError, match=r"`ddpx recipe mnist_convnet dataset.download=true`"):
        build_mnist(request(tmp_path, MNIST_PARAMS))


def test_cifar_batches_with_labels_or_images_outside_the_format_name_their_file(tmp_path):
    """What only the ranks see (the labels inside the pickles) is a UserError naming the file."""
    import pickle

    write_cifar10(tmp_path, n_per_batch=20, n_test=20)
    batch = tmp_path / "cifar-10-batches-py" / "data_batch_2"
    entry = pickle.loads(batch.read_bytes())
    batch.write_bytes(pickle.dumps({**entry, "labels": [*entry["labels"][:-1], 10]}))
    with pytest.raises(UserError, match=r"data_batch_2' holds label\(s\) 10, outside the task's 10 classes"):
        build_cifar10(request(tmp_path, CIFAR_PARAMS, verify=False))
    batch.write_bytes(pickle.dumps({**entry, "data": entry["data"][:, :1024]}))  # one channel, not three
    with pytest.raises(UserError, match=r"data_batch_2' holds images of shape \(20, 1024\) and 20 labels"):
        build_cifar10(request(tmp_path, CIFAR_PARAMS, verify=False))
