"""The peers benchmark's probe, a ddpx plugin: each rank writes the record the peers write
(``benchmarks/peers/loops.py``): when its first training step starts (``ddpx_fit_start``: model
built and wrapped), each epoch's training and whole seconds (from ddpx's own epoch metrics), its
peak memory and the held-out accuracy, to ``$DDPX_PEERS_OUT.rank-N.json``.
Loaded with ``DDPX_PLUGINS=benchmarks.peers.probe`` (the repository root on ``PYTHONPATH``).
"""

import os
import time
from pathlib import Path

from benchmarks.peers.record import Record
from ddpx.api import hookimpl

RECORD: dict = {}


@hookimpl
def ddpx_fit_start(context):
    RECORD["record"] = Record(context.device)
    RECORD["record"].first_step = time.time()


@hookimpl
def ddpx_epoch_end(context, epoch, metrics):
    samples = int(os.environ["DDPX_PEERS_TRAIN_SIZE"])
    RECORD["record"].epochs.append(
        {
            "train_s": samples / metrics["samples_per_s"],
            "epoch_s": metrics["epoch_s"],
            "dev_accuracy": metrics["dev_accuracy"],
        }
    )


@hookimpl
def ddpx_fit_end(context, result):
    RECORD["record"].write(Path(os.environ["DDPX_PEERS_OUT"]), context.rank, result.heldout["heldout_accuracy"])
