"""The ``mlp_synthetic`` task, the ``mlp`` model and the ``mlp_synthetic`` recipe.

A 32-class problem with a known ceiling: inputs are drawn around one random centre per class,
far enough apart that the classes barely overlap, and a fraction ``label_noise`` of labels is
replaced by a uniformly random class. No model can beat the Bayes accuracy
``1 - label_noise + label_noise / n_classes`` (0.9709 with the defaults) or the cross-entropy
floor of the noisy labels (0.231); the default recipe gets within about 0.01 of both.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ddpx.api import (
    DataRequest,
    ModelSpec,
    Param,
    RecipeSource,
    TablePredictor,
    TaskData,
    TaskSpec,
    UserError,
    hookimpl,
)

DATASET_PARAMS = {
    "train_size": Param(10000, "training samples", minimum=1),
    "dev_size": Param(2000, "dev samples (model selection)", minimum=1),
    "heldout_size": Param(2000, "held-out samples (final metric)", minimum=1),
    "dim_in": Param(1024, "input features", minimum=1),
    "n_classes": Param(32, "classes", minimum=2),
    "class_sep": Param(0.4, "spread of the class centres (per-feature std); larger is easier", above=0),
    "label_noise": Param(0.03, "fraction of labels replaced by a random class", minimum=0, maximum=1),
}

MODEL_PARAMS = {
    "n_layers": Param(4, "linear layers, input and output layers included", minimum=1),
    "dim_hidden": Param(256, "width of the hidden layers", minimum=1),
}


def bayes_accuracy(label_noise: float, n_classes: int) -> float:
    """The best held-out accuracy any model can expect under this label noise."""
    return 1 - label_noise + label_noise / n_classes


def build_data(request: DataRequest) -> TaskData:
    from ddpx.plugins.mlp_synthetic.data import make_splits

    return make_splits(request.params, request.seed)


def build_model(params, info):
    from ddpx.plugins.mlp_synthetic.model import MLP

    return MLP(info["dim_in"], info["n_classes"], params["dim_hidden"], params["n_layers"])


def recipe_path() -> Path:
    return Path(str(resources.files(__package__) / "recipes" / "mlp_synthetic.toml"))


def check_sizes(params, world_size):
    """Before launch: every rank needs at least one training sample."""
    if params["train_size"] < world_size:
        raise UserError(
            f"dataset.train_size={params['train_size']} gives fewer training samples than the job's "
            f"{world_size} ranks; every rank needs at least one. Use fewer ranks (--nproc) or a larger "
            "dataset.train_size."
        )


def feature_columns(info) -> list[str]:
    return [f"x{i}" for i in range(info["dim_in"])]


def predict_table(model, info, table):
    """The ``predicted`` class and its ``probability`` for every row of features ``x0``..``x{dim_in-1}``."""
    import torch

    columns = feature_columns(info)
    missing = [c for c in columns if c not in getattr(table, "columns", ())]
    if missing:
        raise UserError(
            f"this mlp_synthetic model reads {len(columns)} feature columns x0..x{len(columns) - 1}; the "
            f"input lacks {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}."
        )
    probabilities = torch.softmax(model(torch.tensor(table[columns].to_numpy(), dtype=torch.float32)), dim=1)
    confidence, predicted = probabilities.max(dim=1)
    out = table[[]].copy()
    out["predicted"], out["probability"] = predicted.numpy(), confidence.numpy()
    return out


def example_table(info):
    import pandas as pd

    return pd.DataFrame([[0.0] * info["dim_in"], [1.0] * info["dim_in"]], columns=feature_columns(info))


@hookimpl
def register_tasks(register):
    register(
        TaskSpec(
            "mlp_synthetic",
            "32-class Gaussian clusters with label noise (known ceiling)",
            build_data,
            loss="cross_entropy",
            metric="accuracy",
            params=DATASET_PARAMS,
            check=check_sizes,
            predictor=TablePredictor(predict_table, example_table),
            train_samples=lambda params: params["train_size"],
        )
    )


@hookimpl
def register_models(register):
    register(ModelSpec("mlp", "multi-layer perceptron with ReLU", build_model, params=MODEL_PARAMS))


@hookimpl
def register_recipes(register):
    register(RecipeSource(recipe_path()))
