"""Vision tasks through torchvision: ``mnist`` with the ``convnet`` model (recipe
``mnist_convnet``), ``cifar10`` with ``resnet18`` (recipe ``cifar10_resnet18``), and
``image_folder``, your own images in a folder per class (``image_folder_resnet18``,
``image_folder_convnet``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ddpx.api import ModelSpec, Param, RecipeSource, TablePredictor, TaskSpec, hookimpl

MNIST_MEAN, MNIST_STD = (0.1307,), (0.3081,)
CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)  # the CIFAR-10 DDP walkthrough's values


def _common_params() -> dict[str, Param]:
    return {
        "root": Param("", "data folder (default: $DDPX_DATA_DIR or ~/.cache/ddpx/data)"),
        "download": Param(False, "download through torchvision (local rank 0 only; the others wait)"),
        "loader": Param(
            "auto",
            "fast (uint8 tensor on the device, batched augmentation), torchvision "
            "(per-sample transforms in a DataLoader), or auto (fast when it fits)",
            choices=("auto", "fast", "torchvision"),
        ),
        "dev_fraction": Param(
            0.1, "stratified share of the official training set used for model selection", above=0, below=1
        ),
    }


SPLIT_IMPORTS = ("sklearn.model_selection",)  # the stratified dev split (data.py), made by each rank
MNIST_PARAMS = {
    **_common_params(),
    "mirror": Param(
        "",
        "base URL of an MNIST mirror for dataset.download (default: torchvision's mirrors)",
        schemes=("http", "https"),
    ),
}
CIFAR_PARAMS = {
    **_common_params(),
    "augment": Param(True, "random crop (padding 4) and horizontal flip of training images"),
    "verify": Param(True, "check the files against torchvision's MD5 sums (false for re-packed copies)"),
}


def build_mnist(request):
    from ddpx.plugins.vision.data import ImageSpec, build_image_splits
    from ddpx.plugins.vision.sources import load_mnist

    train, test = load_mnist(request)
    spec = ImageSpec(MNIST_MEAN, MNIST_STD, size=28, crop_padding=0, flip=False)
    return build_image_splits(
        request,
        train,
        test,
        spec,
        {"num_classes": 10, "in_channels": 1, "image_size": 28, "classes": [str(i) for i in range(10)]},
    )


def build_cifar10(request):
    from ddpx.plugins.vision.data import ImageSpec, build_image_splits
    from ddpx.plugins.vision.sources import load_cifar10

    train, test, classes = load_cifar10(request)
    spec = ImageSpec(CIFAR_MEAN, CIFAR_STD, size=32, crop_padding=4, flip=True)
    return build_image_splits(
        request, train, test, spec, {"num_classes": 10, "in_channels": 3, "image_size": 32, "classes": classes}
    )


def check_mnist(params):
    from ddpx.plugins.vision.sources import dataset_root, missing_data_error, mnist_missing

    root = dataset_root(params)
    if not params["download"] and mnist_missing(root):
        raise missing_data_error("mnist_convnet", "MNIST", root, mnist_missing(root), "MNIST/raw")
    if not mnist_missing(root):
        from ddpx.plugins.vision.file_checks import check_mnist_files

        check_mnist_files(root / "MNIST" / "raw", dev_fraction=params["dev_fraction"])


def check_cifar10(params):
    from ddpx.plugins.vision.sources import cifar_missing, dataset_root, missing_data_error

    root = dataset_root(params)
    if not params["download"] and cifar_missing(root):
        raise missing_data_error("cifar10_resnet18", "CIFAR-10", root, cifar_missing(root), "cifar-10-batches-py")
    if not cifar_missing(root):
        from ddpx.plugins.vision.file_checks import check_cifar_files
        from ddpx.plugins.vision.sources import CIFAR_FILES

        check_cifar_files(root / "cifar-10-batches-py", CIFAR_FILES)


def build_convnet(params, info):
    from ddpx.plugins.vision.models import ConvNet

    return ConvNet(info["num_classes"], info["in_channels"], info["image_size"])


def build_resnet18(params, info):
    from ddpx.plugins.vision.models import resnet18

    return resnet18(info["num_classes"], params["stem"])


def image_predictor(mean=None, std=None) -> TablePredictor:
    """Images (a ``path`` or an ``image`` column) in, the ``predicted`` class and its ``probability`` out;
    normalised by ``mean`` and ``std``, or by the training split's own (``info``) when not given."""

    def predict(model, info, table):
        from ddpx.plugins.vision.predict import predict_images

        return predict_images(model, info, table, mean or info["mean"], std or info["std"])

    def example(info):
        from ddpx.plugins.vision.predict import example_images

        return example_images(info)

    return TablePredictor(predict, example)


def _recipe(name: str) -> RecipeSource:
    return RecipeSource(Path(str(resources.files(__package__) / "recipes" / f"{name}.toml")))


@hookimpl
def register_tasks(register):
    register(
        TaskSpec(
            "mnist",
            "MNIST handwritten digits (torchvision); held-out = the official test set",
            build_mnist,
            loss="cross_entropy",
            metric="accuracy",
            params=MNIST_PARAMS,
            check=check_mnist,
            predictor=image_predictor(MNIST_MEAN, MNIST_STD),
            imports=SPLIT_IMPORTS,
        )
    )
    register(
        TaskSpec(
            "cifar10",
            "CIFAR-10 images (torchvision); held-out = the official test set",
            build_cifar10,
            loss="cross_entropy",
            metric="accuracy",
            params=CIFAR_PARAMS,
            check=check_cifar10,
            predictor=image_predictor(CIFAR_MEAN, CIFAR_STD),
            imports=SPLIT_IMPORTS,
        )
    )
    from ddpx.plugins.vision.image_folder import IMAGE_FOLDER_PARAMS

    register(
        TaskSpec(
            "image_folder",
            "your own images, a folder per class (PNG, JPEG, any size); held-out = a fixed stratified share",
            build_image_folder,
            loss="cross_entropy",
            metric="accuracy",
            heldout_metrics=("roc_auc",),  # the macro one-vs-rest ROC-AUC beside it, as a molecule classifier's
            params=IMAGE_FOLDER_PARAMS,
            check=check_image_folder,
            predictor=image_predictor(),
            imports=SPLIT_IMPORTS,
        )
    )


def build_image_folder(request):
    from ddpx.plugins.vision.image_folder import build_image_folder as build

    return build(request)


def check_image_folder(params):
    from ddpx.plugins.vision.image_folder import check_image_folder as check

    check(params)


@hookimpl
def register_models(register):
    register(ModelSpec("convnet", "two conv blocks (16, 32 channels) and a linear head", build_convnet))
    register(
        ModelSpec(
            "resnet18",
            "torchvision ResNet-18",
            build_resnet18,
            params={
                "stem": Param(
                    "imagenet",
                    "imagenet (torchvision's 7x7/2 conv + max-pool) or cifar (3x3/1 conv, no max-pool)",
                    choices=("imagenet", "cifar"),
                )
            },
        )
    )


@hookimpl
def register_recipes(register):
    register(_recipe("mnist_convnet"))
    register(_recipe("cifar10_resnet18"))
    register(_recipe("image_folder_resnet18"))
    register(_recipe("image_folder_convnet"))
