"""Vision recipes end to end on tiny files in torchvision's formats (real MNIST: test_vision_real_mnist.py)."""

import json

import pytest
from image_files import write_cifar10, write_mnist
from mlflow.tracking import MlflowClient


@pytest.fixture(scope="module")
def tiny_images(tmp_path_factory):
    root = tmp_path_factory.mktemp("images")
    write_mnist(root, n_train=600, n_test=200)
    write_cifar10(root, n_per_batch=60, n_test=100)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("loader", ["fast", "torchvision"])  # the launchers are the launcher tests' business
def test_mnist_convnet_on_both_paths_logs_accuracy_and_confusion_matrix(
    job_here, ddpx_here, tiny_images, new_store, loader
):
    result = job_here(
        "mnist_convnet",
        f"dataset.root={tiny_images}",
        f"dataset.loader={loader}",
        "train.max_epochs=3",
        "train.batch_size=32",
        tracking_uri=new_store,
    )
    client = MlflowClient(new_store)
    (run,) = client.search_runs([client.get_experiment_by_name("mnist_convnet").experiment_id])
    assert run.data.metrics["heldout_accuracy"] >= 0.9  # both paths learn the patterns
    assert run.data.metrics["heldout_samples"] == 200
    assert run.data.params["dataset.loader"] == loader and run.data.params["train.channels_last"] == "True"
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert "heldout_confusion_matrix.png" in artifacts
    png = result.run_dirs()[0] / "reports" / "heldout_confusion_matrix.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if loader == "fast":
        predicted_from_files_and_pixels_alike(ddpx_here, result.run_dirs()[0] / "model", tiny_images.parent)


def predicted_from_files_and_pixels_alike(ddpx, model_folder, work):
    """`ddpx predict MODEL FOLDER` on PNG files of new digits, and the model's table predictor on
    the same pixels (as an MLflow model serving JSON receives them), give the same classes."""
    import numpy as np
    import pandas as pd
    import torch
    from image_files import class_images
    from torchvision.io import write_png

    from ddpx.api import load_table_predictor

    labels = np.arange(10)
    images = class_images(labels, 1, 28, seed=7)[:, 0]  # unseen images of the ten patterns
    folder = work / "digits"
    folder.mkdir(exist_ok=True)
    for label, image in zip(labels, images):
        write_png(torch.from_numpy(image)[None], str(folder / f"digit-{label}.png"))
    answered = ddpx("predict", str(model_folder), str(folder))
    assert answered.returncode == 0, answered.output
    rows = [line.split(",") for line in answered.stdout.splitlines()[1:]]
    assert [row[0].rsplit("-", 1)[1] for row in rows] == [f"{label}.png" for label in labels]
    from_files = [row[1] for row in rows]
    assert sum(p == str(label) for p, label in zip(from_files, labels)) >= 8  # it learnt the patterns
    from_pixels = load_table_predictor(model_folder)(pd.DataFrame({"image": [image.tolist() for image in images]}))
    assert list(from_pixels["predicted"]) == from_files


@pytest.mark.slow
def test_cifar10_resnet18_runs_with_bf16_channels_last_and_onecycle(job_here, tmp_path):
    # bf16 on a CPU without bf16 instructions is slow: the recipe's own (ImageNet) stem, 48 training,
    # 12 dev and 10 held-out images show the path works; the CIFAR stem is checked below
    write_cifar10(tmp_path, n_per_batch=12, n_test=10)
    result = job_here(
        "cifar10_resnet18",
        f"dataset.root={tmp_path}",
        "dataset.verify=false",
        "dataset.dev_fraction=0.2",
        "train.precision=bf16",
        "train.max_epochs=1",
        "train.batch_size=12",
        "train.lr_schedule=onecycle",
        nproc=1,
        plugins=("ddpx_testplug_forward_probe",),
    )
    summary, run_dir = result.summary(), result.run_dirs()[0]
    assert summary["heldout_samples"] == 10 and 0 <= summary["heldout"]["heldout_accuracy"] <= 1
    job = json.loads((run_dir / "job.json").read_text())
    assert job["config"]["train"]["channels_last"] and job["config"]["train"]["precision"] == "bf16"
    ran = json.loads((run_dir / "forward-rank0.json").read_text())  # what the training forward got and gave
    assert ran == {"channels_last": True, "output_dtype": "bfloat16", "compiled_graphs": 0}


def test_the_cifar_stem_keeps_32x32_images_whole_until_the_residual_stages():
    import torch

    from ddpx.plugins.vision.models import resnet18

    cifar, imagenet = resnet18(10, "cifar"), resnet18(10, "imagenet")
    assert (cifar.conv1.kernel_size, cifar.conv1.stride) == ((3, 3), (1, 1))
    assert isinstance(cifar.maxpool, torch.nn.Identity)
    images = torch.zeros(2, 3, 32, 32)
    stem = lambda m: m.maxpool(m.relu(m.bn1(m.conv1(images))))  # noqa: E731
    assert stem(cifar).shape[-2:] == (32, 32) and stem(imagenet).shape[-2:] == (8, 8)
    assert cifar(images).shape == (2, 10)


def test_missing_vision_data_is_an_error_before_launch(ddpx_here, tmp_path):
    result = ddpx_here("recipe", "mnist_convnet", f"dataset.root={tmp_path}")
    assert result.returncode == 2
    assert "`ddpx recipe mnist_convnet dataset.download=true`" in result.stderr and "Traceback" not in result.stderr
