"""Test plugin: rank 0 keeps the model's encoder (its message passing) after every epoch, as
``encoder-epoch-N.pt`` in the run folder, so a test can see what each epoch did to it."""

import torch

from ddpx import hookimpl


@hookimpl
def ddpx_epoch_end(context, epoch, metrics):
    if context.rank == 0:
        model = getattr(context.model, "module", context.model)  # the plain model inside DDP
        weights = {k: v.detach().clone() for k, v in model.message_passing.state_dict().items()}
        torch.save(weights, context.run_dir / f"encoder-epoch-{epoch}.pt")
