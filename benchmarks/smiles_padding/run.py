"""Padding and epoch time of the SMILES model with ``train.sampler=distributed`` and
``length_bucketed``, side by side in one process, for docs/performance.md.

    python benchmarks/smiles_padding/run.py --data ~/.cache/ddpx/data/bbbp/BBBP.csv
    python benchmarks/smiles_padding/run.py --data HIV.csv --label-column HIV_active --batch-size 128

For the training split of the file (the recipe's random split, seed 0) it reports, at world sizes
1, 2 and 4, the share of the padded batches' tokens that is padding under each sampler; then it
times training epochs of the ``bbbp_rnn`` model (forward and backward, one process, the batches
rank 0 of a 2-rank job would take), alternating the samplers, best of ``--repeats``.
"""

from __future__ import annotations

import argparse
import platform
import time
from datetime import date
from pathlib import Path

import torch
from torch.utils.data.distributed import DistributedSampler

from ddpx.plugins.samplers import LengthBucketedSampler
from ddpx.plugins.smiles.csv_table import read_smiles_csv
from ddpx.plugins.smiles.dataset import SmilesDataset, collate
from ddpx.plugins.smiles.model import SmilesRNN
from ddpx.plugins.smiles.splits import random_split
from ddpx.plugins.smiles.tokenizer import Vocabulary


def orders(lengths: list[int], world: int, sampler: str) -> list[list[int]]:
    if sampler == "distributed":
        return [list(DistributedSampler(range(len(lengths)), num_replicas=world, rank=r, seed=0)) for r in range(world)]
    return [list(LengthBucketedSampler(lengths, rank=r, world_size=world, seed=0)) for r in range(world)]


def padding_share(lengths: list[int], rank_orders: list[list[int]], batch: int) -> float:
    padded = real = 0
    for order in rank_orders:
        for start in range(0, len(order), batch):
            sizes = [lengths[i] for i in order[start : start + batch]]
            padded += max(sizes) * len(sizes)
            real += sum(sizes)
    return 1 - real / padded


def epoch_seconds(model: SmilesRNN, data: SmilesDataset, order: list[int], batch: int) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    start = time.perf_counter()
    for first in range(0, len(order), batch):
        inputs, labels = collate([data[i] for i in order[first : first + batch]])
        optimizer.zero_grad()
        loss_fn(model(inputs), labels).backward()
        optimizer.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--smiles-column", default="smiles")
    parser.add_argument("--label-column", default="p_np")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    table = read_smiles_csv(args.data, args.smiles_column, args.label_column, strict=False)
    train, _, _ = random_split(table.labels, 0, 0.1, 0.2)
    vocabulary = Vocabulary.build(table.tokens[i] for i in train)
    data = SmilesDataset([vocabulary.encode(table.tokens[i]) for i in train], [table.labels[i] for i in train])
    lengths = data.lengths()
    print(
        f"{date.today()}: {platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}; "
        f"{args.data.name}: {len(train)} training molecules, {min(lengths)}-{max(lengths)} tokens, batch "
        f"{args.batch_size}\n"
    )
    print("| ranks | padding, distributed | padding, length_bucketed |")
    print("| --- | --- | --- |")
    for world in (1, 2, 4):
        shares = [
            padding_share(lengths, orders(lengths, world, s), args.batch_size)
            for s in ("distributed", "length_bucketed")
        ]
        print(f"| {world} | {shares[0]:.1%} | {shares[1]:.1%} |")
    torch.manual_seed(0)
    model = SmilesRNN(len(vocabulary), num_labels=1)
    best = {"distributed": float("inf"), "length_bucketed": float("inf")}
    for _ in range(args.repeats):
        for sampler in best:
            order = orders(lengths, 2, sampler)[0]
            best[sampler] = min(best[sampler], epoch_seconds(model, data, order, args.batch_size))
    print(
        f"\nrank 0's epoch of a 2-rank job ({len(orders(lengths, 2, 'distributed')[0])} molecules), best of "
        f"{args.repeats}: distributed {best['distributed']:.2f} s, length_bucketed {best['length_bucketed']:.2f} s "
        f"({best['distributed'] / best['length_bucketed']:.2f}x)"
    )


if __name__ == "__main__":
    main()
