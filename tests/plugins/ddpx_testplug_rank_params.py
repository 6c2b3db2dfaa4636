"""Test plugin: a model whose initial weights differ on every rank, and a hook that records
every rank's parameters once DDP has wrapped the model (to prove they are then identical) and
the rank's CPU thread settings."""

import json
import os

from ddpx import hookimpl
from ddpx.api import ModelSpec, Param


def build(params, info):
    import torch

    from ddpx.plugins.mlp_synthetic.model import MLP

    torch.manual_seed(1000 + int(os.environ["RANK"]))  # deliberately different on each rank
    return MLP(info["dim_in"], info["n_classes"], params["dim_hidden"], params["n_layers"])


@hookimpl
def register_models(register):
    register(
        ModelSpec(
            "rank_seeded_mlp",
            "an MLP initialised differently on every rank",
            build,
            params={"dim_hidden": Param(32), "n_layers": Param(2)},
        )
    )


@hookimpl
def ddpx_fit_start(context):
    import torch

    from ddpx.rank.checkpoints.rank_state import unwrap

    state = {k: v.detach().cpu().clone() for k, v in unwrap(context.model).state_dict().items()}
    torch.save(state, context.run_dir / f"start-params-rank{context.rank}.pt")
    threads = {"torch": torch.get_num_threads(), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}
    (context.run_dir / f"threads-rank{context.rank}.json").write_text(json.dumps(threads))
