"""The baseline: a plain, hand-written PyTorch DDP training loop for the ``mlp_synthetic`` model.

Run it with torchrun, the way a PyTorch user would:

    python -m torch.distributed.run --standalone --nproc-per-node 2 benchmarks/common/plain_ddp_mlp.py --epochs 4 --out plain.json

``--backend nccl`` trains on ``cuda:LOCAL_RANK`` (one GPU per rank), as ddpx does with NCCL.

Same data tensors (the task's generator), same model class, same seeds, sampler, optimizer,
batch size and thread count as ``ddpx recipe mlp_synthetic``, and no framework: no exact
evaluation, checkpoints, tracking or progress bar. It times each epoch's training loop the way
ddpx does (from the first batch to the last optimizer step) and writes, on rank 0, one JSON
record per epoch: ``train_loss`` and ``samples_per_s``. ``--stamp FILE`` writes the wall-clock
time at which the first training step starts (for the launch-cost benchmark). The framework-overhead
and launch-cost benchmarks run it; the peers benchmark's plain loop joins its group as it does.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from ddpx.plugins.mlp_synthetic.data import make_splits
from ddpx.plugins.mlp_synthetic.model import MLP

RECIPE = {
    "train_size": 10000,
    "dev_size": 2000,
    "heldout_size": 2000,
    "dim_in": 1024,
    "n_classes": 32,
    "class_sep": 0.4,
    "label_noise": 0.03,
}


def join_the_group(backend: str) -> torch.device:
    """This rank's device (``cuda:LOCAL_RANK`` with NCCL, else the CPU), then the process group."""
    device = torch.device("cpu")
    if backend == "nccl":
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    dist.init_process_group(backend)
    return device


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--train-size", type=int, default=RECIPE["train_size"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    parser.add_argument("--stamp", default=None)
    parser.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    args = parser.parse_args()

    device = join_the_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", world))))
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    data = make_splits({**RECIPE, "train_size": args.train_size}, args.seed)
    model = MLP(RECIPE["dim_in"], RECIPE["n_classes"], dim_hidden=256, n_layers=4).to(device)
    model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    torch.manual_seed(args.seed + 1 + rank)
    sampler = DistributedSampler(data.train, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(data.train, batch_size=args.batch_size, sampler=sampler, pin_memory=device.type == "cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    records = []
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        totals = torch.zeros(2, dtype=torch.float64, device=device)
        if args.stamp and epoch == 1 and rank == 0:
            with open(args.stamp, "w") as fh:
                fh.write(repr(time.time()))
        start = time.perf_counter()
        for inputs, targets in loader:
            inputs, targets = inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            totals[0] += loss.detach().double() * targets.shape[0]
            totals[1] += targets.shape[0]
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - start
        dist.all_reduce(totals)
        records.append(
            {"epoch": epoch, "train_loss": float(totals[0] / totals[1]), "samples_per_s": float(totals[1]) / seconds}
        )
    if rank == 0 and args.out:
        with open(args.out, "w") as fh:
            json.dump(records, fh)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
