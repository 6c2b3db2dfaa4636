"""Test plugin: rank 1 nudges one parameter after the wrapper synced the ranks, so they differ.

``DDPX_TEST_DESYNC=NAME`` names the parameter (of the plain model) to nudge.
"""

import os

import torch

from ddpx import hookimpl
from ddpx.rank.checkpoints.rank_state import unwrap


@hookimpl
def ddpx_fit_start(context):
    name = os.environ.get("DDPX_TEST_DESYNC")
    if name and context.rank == 1:
        with torch.no_grad():
            dict(unwrap(context.model).named_parameters())[name].add_(0.01)
