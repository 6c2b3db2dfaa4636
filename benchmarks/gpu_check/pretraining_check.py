"""One epoch of descriptor pretraining (``moses_pretrain_dmpnn``) on the GPU, and what an epoch of all
of MOSES would take at that rate.

The graph store and the descriptor targets are prepared first by CPU ranks over gloo (one a core
but one: preparing is host work, and a machine with one GPU starts one NCCL rank), with
``train.max_epochs=0``; then one GPU rank trains one epoch from those caches (the same data folder,
``DDPX_DATA_DIR``). The row gives both times, the epoch's molecules/s and that rate carried to
MOSES's 1 584 663 training molecules, said to be a projection, not a run of them all.
"""

from __future__ import annotations

import gzip
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.common.environment import use_test_file_writers
from benchmarks.gpu_check.runs import Row, Runs, cpu_env, ddpx

RECIPE = "moses_pretrain_dmpnn"
MOSES = 1_584_663
MOLECULES = 200_000  # on a GPU; a dry run takes DRY_MOLECULES
DRY_MOLECULES = 160
CHECK = "moses_pretrain_dmpnn: one epoch"


def moses_file(runs: Runs) -> Path:
    """MOSES's training file under ``--data``, or (dry, or absent) a small file of its shape."""
    real = runs.data / "moses" / "train.csv.gz" if runs.data else None
    if real is not None and real.is_file():
        return real
    use_test_file_writers()
    from smiles_files import molecule

    rng = random.Random(0)
    smiles = [molecule(rng, i % 3 == 0) for i in range(DRY_MOLECULES)]
    path = runs.workdir / "moses-shaped.csv.gz"
    path.write_bytes(gzip.compress(("SMILES\n" + "\n".join(smiles) + "\n").encode()))
    return path


def prepare_ranks(runs: Runs) -> int:
    cores = max(1, (os.cpu_count() or 2) - 1)  # a power of two: the recipe's global batch splits evenly
    return 2 if runs.dry else 1 << min(4, cores.bit_length() - 1)


def pretraining(runs: Runs) -> Iterator[Row]:
    if not runs.gpus and not runs.dry:
        yield Row(CHECK, "not run", "SKIP", "needs a GPU")
        return
    data = moses_file(runs)
    size = DRY_MOLECULES if runs.dry else MOLECULES
    keys = [f"dataset.path={data}", f"dataset.limit={size}"]
    folder = {"DDPX_DATA_DIR": str(runs.workdir / "pretraining-data")}
    ranks = prepare_ranks(runs)
    started = time.perf_counter()
    ddpx(RECIPE, [*keys, "train.max_epochs=0"], runs.workdir, nproc=ranks, backend="gloo", env=cpu_env() | folder)
    prepared = time.perf_counter() - started
    trained = ddpx(
        RECIPE,
        [*keys, "train.max_epochs=1"],
        runs.workdir,
        nproc=1,
        env=(cpu_env() if runs.dry else {}) | folder,
    )
    epoch = [line for line in trained.epochs if "samples_per_s" in line][-1]
    rate, seconds = epoch["samples_per_s"], epoch["epoch_s"]  # the epoch's wall: training and its dev evaluation
    yield Row(
        CHECK,
        f"{seconds:,.1f} s for {size:,} molecules ({rate:,.0f} molecules/s in training); "
        f"all {MOSES:,} at this pace: {seconds * MOSES / size / 60:,.1f} min",
        "INFO",
        f"{runs.where}; graphs and targets prepared in {prepared:,.0f} s on {ranks} CPU rank(s) first; "
        "the full-MOSES figure is projected, not run",
    )
