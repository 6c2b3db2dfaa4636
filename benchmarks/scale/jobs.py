"""The ddpx runs one size takes: ``moses_pretrain_dmpnn`` on the file's first N molecules with a data
folder of its own, first with ``train.max_epochs=0`` (the ranks prepare the graphs and targets,
then evaluate the initial model: the preparation), then one epoch at each number of ranks (the
caches made, so each starts training at once). Each rank's peak private memory is sampled while it
runs (:class:`~benchmarks.scale.memory.PeakSampler`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common.environment import ROOT
from benchmarks.scale.memory import PeakSampler

RECIPE = "moses_pretrain_dmpnn"


def ddpx_env(data_dir: Path) -> dict[str, str]:
    """The environment of a ddpx job whose data folder (and so its caches) is ``data_dir``."""
    path = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "DDPX_DATA_DIR": str(data_dir), "PYTHONPATH": path}


def run_recipe(data: Path, size: int, nproc: int, epochs: int, work: Path, log: Path) -> dict:
    """One ``ddpx recipe`` run; returns its wall seconds, its ranks' peak ``RssAnon`` (MiB) and its
    run folder. Raises when it fails (its output is in ``log``)."""
    runs = work.resolve() / "runs"
    before = set(runs.glob("*")) if runs.exists() else set()
    command = [
        *(sys.executable, "-m", "ddpx", "recipe", RECIPE),
        *(f"dataset.path={data.resolve()}", f"dataset.limit={size}", f"train.max_epochs={epochs}"),
        *("--nproc", str(nproc), "--tracking", "none", "--run-dir", str(runs)),
    ]
    started = time.perf_counter()
    with log.open("a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        process = subprocess.Popen(command, env=ddpx_env(work / "data"), stdout=out, stderr=subprocess.STDOUT)
        with PeakSampler(process.pid) as sampler:
            code = process.wait()
    seconds = time.perf_counter() - started
    if code != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {code}; its output is in {log}")
    (run_dir,) = set(runs.glob("*")) - before
    return {"wall_s": seconds, "peak_rss_anon_mb": sampler.peak_mb(), "run_dir": run_dir}


def epoch_metrics(run_dir: Path) -> dict:
    """The last training epoch's line of the run's ``metrics.jsonl``."""
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    trained = [line for line in lines if "samples_per_s" in line]
    if not trained:
        raise RuntimeError(f"{run_dir}: no training epoch in metrics.jsonl")
    return trained[-1]


def cache_facts(data_dir: Path) -> dict:
    """The graph store's and the targets' bytes on disk and seconds to make (their ``meta.json``)."""
    facts = {}
    for name, folder, seconds in (
        ("graphs", "molecule_graphs", "featurize_seconds"),
        ("targets", "descriptor_targets", "compute_seconds"),
    ):
        root = data_dir / "cache" / folder
        entries = [entry for entry in root.iterdir() if entry.is_dir()] if root.exists() else []
        if len(entries) != 1:
            raise RuntimeError(f"{root}: expected one cache entry, found {len(entries)}")
        meta = json.loads((entries[0] / "meta.json").read_text())
        files = [path for path in entries[0].rglob("*") if path.is_file()]
        facts[name] = {
            "bytes": sum(path.stat().st_size for path in files),
            "seconds": meta[seconds],
            "folder": entries[0],
        }
    return facts


def measure_ddpx(data: Path, size: int, ranks: list[int], work: Path) -> dict:
    """Prepare ``size`` molecules on 2 ranks with an empty data folder, then train one epoch at each
    of ``ranks``; everything one row of the table says of ddpx."""
    work.mkdir(parents=True, exist_ok=True)
    log = work / "ddpx.log"
    prepared = run_recipe(data, size, 2, 0, work, log)
    facts = cache_facts(work / "data")
    row = {
        "molecules": size,
        "prepare_wall_s": prepared["wall_s"],
        "graphs_s": facts["graphs"]["seconds"],
        "targets_s": facts["targets"]["seconds"],
        "graphs_bytes": facts["graphs"]["bytes"],
        "targets_bytes": facts["targets"]["bytes"],
        "prepare_peak_rss_anon_mb": prepared["peak_rss_anon_mb"],
        "train": {},
    }
    for nproc in ranks:
        trained = run_recipe(data, size, nproc, 1, work, log)
        epoch = epoch_metrics(trained["run_dir"])
        row["train"][str(nproc)] = {
            "samples_per_s": epoch["samples_per_s"],
            "epoch_s": epoch.get("epoch_s"),
            "wall_s": trained["wall_s"],
            "peak_rss_anon_mb": trained["peak_rss_anon_mb"],
        }
    row["targets_folder"] = str(facts["targets"]["folder"])
    return row
