"""The ddpx runs the GPU checks ask for, each made once through the real command line, and the
settings every check shares (:class:`Runs`); a check's rows (:class:`Row`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common.environment import plugin_env


@dataclass
class Row:
    check: str
    result: str
    status: str  # PASS, FAIL, SKIP
    detail: str = ""


@dataclass
class Run:
    summary: dict
    epochs: list
    wall_s: float
    devices: list
    folder: Path


def ddpx(
    recipe: str, overrides: list[str], workdir: Path, *, nproc: int = 1, backend: str = "auto", env: dict | None = None
) -> Run:
    """One run through the real CLI; its summary, per-epoch metrics, wall time and each rank's device."""
    probe = Path(tempfile.mkdtemp(dir=workdir))
    full_env = {
        **os.environ,
        **(env or {}),
        "DDPX_GPU_CHECK_PROBE": str(probe),
        **plugin_env("benchmarks.gpu_check.probe"),
    }
    before = set((workdir / "ddpx-runs").glob("*")) if (workdir / "ddpx-runs").is_dir() else set()
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ddpx",
            "recipe",
            recipe,
            "--nproc",
            str(nproc),
            "--backend",
            backend,
            "--tracking",
            "none",
            *overrides,
        ],
        cwd=workdir,
        env=full_env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(
            f"{recipe} exited {done.returncode}: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
        )
    (run_dir,) = set((workdir / "ddpx-runs").glob("*")) - before
    metrics = run_dir / "metrics.jsonl"  # none where the run trained no epoch (train.max_epochs=0)
    epochs = (
        [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()] if metrics.is_file() else []
    )
    devices = [json.loads(p.read_text()) for p in sorted(probe.glob("rank-*.json"))]
    return Run(json.loads((run_dir / "summary.json").read_text()), epochs, wall, devices, run_dir)


def heldout(run: Run) -> float:
    return run.summary["heldout"][f"heldout_{run.summary['metric']}"]


def cpu_env() -> dict:
    return {"CUDA_VISIBLE_DEVICES": ""}


class Runs:
    """What every check shares: the settings (``dry`` runs every check on the CPU with tiny sizes)
    and the ddpx runs made so far, so that one run serves every check that asks for it."""

    def __init__(self, dry: bool, data: Path | None, workdir: Path, out: Path | None = None):
        import torch

        self.dry, self.data, self.workdir, self.out = dry, data, workdir, out
        self.gpus = 0 if dry else torch.cuda.device_count()
        self.mlp = [
            f"train.max_epochs={1 if dry else 2}",
            *(
                [
                    "dataset.train_size=800",
                    "dataset.dev_size=200",
                    "dataset.heldout_size=200",
                    "dataset.dim_in=64",
                    "train.batch_size=32",
                ]
                if dry
                else []
            ),
        ]
        self.where = "dry: CPU" if dry else ("GPU" if self.gpus else "no GPU found")
        self.done: dict[tuple, Run] = {}  # one run serves every row that asks for the same run

    def run(self, recipe, overrides, **kwargs) -> Run:
        if self.dry:  # a dry run asked for without a rank count has 2 CPU ranks: the MLP rows share one
            kwargs.setdefault("nproc", 2)
        key = (recipe, tuple(overrides), tuple(sorted(kwargs.items())))
        if key not in self.done:
            env = cpu_env() if self.dry else None
            self.done[key] = ddpx(recipe, overrides, self.workdir, env=env, **kwargs)
        return self.done[key]

    def on_cpu(self, recipe, overrides, **kwargs) -> Run:
        """The same run on CPU ranks with gloo (the checks that call it have no dry run of it)."""
        return ddpx(recipe, overrides, self.workdir, backend="gloo", env=cpu_env(), **kwargs)
