"""The ddpx plugin of ddpx-moons: a task, a model and a recipe, through ddpx's hooks."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ddpx.api import ModelSpec, Param, RecipeSource, TaskData, TaskSpec, hookimpl

# --8<-- [start:task]
TASK_PARAMS = {
    "samples": Param(2000, "points drawn", minimum=30),
    "noise": Param(0.2, "standard deviation of the Gaussian noise added to the points", minimum=0),
    "heldout_fraction": Param(0.2, "share held out for the final metric", above=0),
    "dev_fraction": Param(0.2, "share of the rest used for model selection", above=0),
}


def build_moons(request) -> TaskData:
    """Identical on every rank: everything is drawn from ``request.seed``."""
    import torch
    from sklearn.datasets import make_moons
    from sklearn.model_selection import train_test_split
    from torch.utils.data import TensorDataset

    p = request.params
    points, labels = make_moons(n_samples=p["samples"], noise=p["noise"], random_state=request.seed)
    index = list(range(len(labels)))
    rest, heldout = train_test_split(index, test_size=p["heldout_fraction"], stratify=labels, random_state=request.seed)
    train, dev = train_test_split(rest, test_size=p["dev_fraction"], stratify=labels[rest], random_state=request.seed)
    x = torch.tensor(points, dtype=torch.float32)
    y = torch.tensor(labels, dtype=torch.float32)
    split = lambda idx: TensorDataset(x[idx], y[idx])  # noqa: E731
    return TaskData(train=split(train), dev=split(dev), heldout=split(heldout), info={"features": 2})


# --8<-- [end:task]


# --8<-- [start:model]
def build_mlp(params, info):
    from torch import nn

    hidden = params["hidden"]

    class MoonsMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(info["features"], hidden),
                nn.Tanh(),
                nn.Linear(hidden, hidden),
                nn.Tanh(),
                nn.Linear(hidden, 1),
            )

        def forward(self, x):
            return self.net(x).squeeze(-1)

    return MoonsMLP()


# --8<-- [end:model]


# --8<-- [start:register]
@hookimpl
def register_tasks(register):
    register(
        TaskSpec(
            "moons",
            "two interleaving half-circles (scikit-learn), binary",
            build_moons,
            loss="bce_with_logits",
            metric="roc_auc",
            params=TASK_PARAMS,
        )
    )


@hookimpl
def register_models(register):
    register(
        ModelSpec(
            "moons_mlp",
            "a small tanh MLP with one logit",
            build_mlp,
            params={"hidden": Param(32, "hidden width", minimum=1)},
        )
    )


@hookimpl
def register_recipes(register):
    register(RecipeSource(Path(str(resources.files("ddpx_moons") / "recipes" / "moons_mlp.toml"))))


# --8<-- [end:register]
