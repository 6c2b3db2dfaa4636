"""The peers ``benchmarks/peers/run.py`` sets ddpx beside: the ``mlp_synthetic`` recipe's model, data,
batch, optimizer and seeds trained by a plain DDP loop, by Lightning's Trainer (DDP strategy) and
by Accelerate, each started by torchrun the way its users start it on one machine:

    python -m torch.distributed.run --standalone --nproc-per-node 2 benchmarks/peers/loops.py \\
        --framework lightning --epochs 3 --out lightning.json

Every variant trains the same epochs, evaluates the dev split after each one (accuracy; Lightning
and ddpx also save a checkpoint per epoch by default, as their users get them) and the held-out
split at the end, on every rank over the whole split (2 000 samples), so the held-out accuracy is
exact. Each rank writes ``<out>.rank-N.json``: the wall-clock time its first training step starts,
each epoch's training seconds (first batch to last optimizer step) and whole seconds (with the dev
evaluation), its peak memory (the GPU's allocator peak, or the process's resident-set high-water
mark on a CPU) and the held-out accuracy (:class:`~benchmarks.peers.record.Record`).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from ddpx.plugins.mlp_synthetic.data import make_splits
from ddpx.plugins.mlp_synthetic.model import MLP

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.common.plain_ddp_mlp import RECIPE, join_the_group
from benchmarks.peers.record import Record


@torch.no_grad()
def accuracy(model: torch.nn.Module, dataset, device: torch.device) -> float:
    model.eval()
    right = 0
    for inputs, targets in DataLoader(dataset, batch_size=512):
        right += int((model(inputs.to(device)).argmax(1) == targets.to(device)).sum())
    model.train()
    return right / len(dataset)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def setup(args) -> tuple:
    world = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    seed_everything(args.seed)
    data = make_splits({**RECIPE, "train_size": args.train_size}, args.seed)
    model = MLP(RECIPE["dim_in"], RECIPE["n_classes"], dim_hidden=256, n_layers=4)
    return data, model


def plain(args, out: Path) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data.distributed import DistributedSampler

    device = join_the_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    data, model = setup(args)
    model = DistributedDataParallel(model.to(device), device_ids=[device.index] if device.type == "cuda" else None)
    sampler = DistributedSampler(data.train, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(data.train, batch_size=args.batch_size, sampler=sampler, pin_memory=device.type == "cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    record = Record(device)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        record.epoch_start()
        for inputs, targets in loader:
            inputs, targets = inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(inputs), targets).backward()
            optimizer.step()
        record.train_end()
        record.epoch_end(accuracy(model.module, data.dev, device))
    record.write(out, rank, accuracy(model.module, data.heldout, device))
    dist.destroy_process_group()


def accelerate(args, out: Path) -> None:
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=args.backend == "gloo")
    data, model = setup(args)
    loader = DataLoader(
        data.train, batch_size=args.batch_size, shuffle=True, generator=torch.Generator().manual_seed(args.seed)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)  # shards the loader per rank
    device, record = accelerator.device, Record(accelerator.device)
    for _ in range(args.epochs):
        record.epoch_start()
        for inputs, targets in loader:
            optimizer.zero_grad(set_to_none=True)
            accelerator.backward(F.cross_entropy(model(inputs), targets))
            optimizer.step()
        record.train_end()
        record.epoch_end(accuracy(accelerator.unwrap_model(model), data.dev, device))
    record.write(out, accelerator.process_index, accuracy(accelerator.unwrap_model(model), data.heldout, device))
    accelerator.end_training()


def lightning(args, out: Path) -> None:
    import lightning as L

    data, model = setup(args)
    record_box: dict = {}

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = model

        def training_step(self, batch, _):
            inputs, targets = batch
            return F.cross_entropy(self.model(inputs), targets)

        def validation_step(self, batch, _):
            inputs, targets = batch
            right = (self.model(inputs).argmax(1) == targets).sum()
            self.log("dev_right", right.float(), reduce_fx="sum", sync_dist=False)

        def configure_optimizers(self):
            return torch.optim.SGD(self.model.parameters(), lr=args.lr)

    class Clock(L.Callback):
        def on_train_epoch_start(self, trainer, module):
            record_box.setdefault("record", Record(module.device)).epoch_start()

        def on_validation_epoch_start(self, trainer, module):
            if trainer.sanity_checking or not record_box:
                return
            record_box["record"].train_end()

        def on_validation_epoch_end(self, trainer, module):
            if trainer.sanity_checking or not record_box:
                return
            record_box["record"].epoch_end(float("nan"))  # dev accuracy: Lightning's own logging

    devices = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))  # torchrun's ranks on this machine
    trainer = L.Trainer(
        accelerator="cpu" if args.backend == "gloo" else "gpu",
        devices=devices,
        strategy="ddp",
        max_epochs=args.epochs,
        num_sanity_val_steps=0,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(out.parent / "lightning"),
        callbacks=[Clock()],
    )
    train = DataLoader(data.train, batch_size=args.batch_size, shuffle=True)  # Lightning adds the sampler
    dev = DataLoader(data.dev, batch_size=512)
    trainer.fit(Module(), train, dev)
    device = trainer.strategy.root_device
    record_box["record"].write(out, trainer.global_rank, accuracy(model.to(device), data.heldout, device))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", choices=("plain", "accelerate", "lightning"), required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--train-size", type=int, default=RECIPE["train_size"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    {"plain": plain, "accelerate": accelerate, "lightning": lightning}[args.framework](args, args.out)


if __name__ == "__main__":
    main()
