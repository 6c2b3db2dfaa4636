"""Test plugin: a third-party molecule model that asks for molecular graphs through ``ddpx.api``
alone (``ModelSpec.inputs="molecule_graph"``), built from Chemprop's modules.

Model ``tiny_graph_model``: Chemprop's bond message passing (``model.hidden`` wide, depth 2), the
sum of each molecule's atoms, and a linear layer: one output per label, ``(B,)`` for one. The
SMILES tasks hand it Chemprop's batched graphs; their ``info`` holds the atom and bond feature
widths (``atom_features``, ``bond_features``) and the label names (``labels``).
"""

from ddpx.api import ModelSpec, Param, hookimpl


def build_model(params, info):
    import torch
    from chemprop.nn import BondMessagePassing, SumAggregation

    class TinyGraphModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.passing = BondMessagePassing(
                d_v=info["atom_features"], d_e=info["bond_features"], d_h=params["hidden"], depth=2
            )
            self.sum = SumAggregation()
            self.head = torch.nn.Linear(params["hidden"], len(info["labels"]))

        def forward(self, graph):
            outputs = self.head(self.sum(self.passing(graph), graph.batch))
            return outputs.squeeze(-1) if outputs.shape[-1] == 1 else outputs

    return TinyGraphModel()


@hookimpl
def register_models(register):
    register(
        ModelSpec(
            "tiny_graph_model",
            "Chemprop's bond message passing, summed, and a linear layer",
            build_model,
            params={"hidden": Param(16, "message width", minimum=1)},
            inputs="molecule_graph",
        )
    )
