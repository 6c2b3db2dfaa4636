"""Test plugin: what a rank's training step really ran with, written to the run folder at each
epoch's end (``forward-rank<N>.json``): the first training batch's memory format as the model got it
(channels-last or not) and the dtype of its output (bfloat16 under bf16 autocast), and how many
graphs ``torch.compile`` has made in this rank (none without ``train.compile``)."""

import json

from ddpx import hookimpl

_seen: dict = {}


@hookimpl
def ddpx_fit_start(context):
    import torch

    if context.job.config["train"]["compile"]:
        return  # no Python hooks inside a compiled region: the graph count says it ran compiled

    def before(module, args):
        if module.training and "channels_last" not in _seen and args[0].dim() == 4:
            _seen["channels_last"] = args[0].is_contiguous(memory_format=torch.channels_last)

    def after(module, args, output):
        if module.training and "output_dtype" not in _seen:
            _seen["output_dtype"] = str(output.dtype).removeprefix("torch.")

    context.model.register_forward_pre_hook(before)
    context.model.register_forward_hook(after)


@hookimpl
def ddpx_epoch_end(context, epoch, metrics):
    from torch._dynamo.utils import counters

    facts = {**_seen, "compiled_graphs": counters["stats"]["unique_graphs"]}
    (context.run_dir / f"forward-rank{context.rank}.json").write_text(json.dumps(facts))
