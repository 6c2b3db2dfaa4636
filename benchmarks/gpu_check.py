"""Everything ddpx says about GPUs, checked in one command, as one Markdown table.

    python benchmarks/gpu_check.py --data ../shared/data          # on a GPU machine (MNIST, BBBP found there)
    python benchmarks/gpu_check.py --dry                          # the same code paths on CPU, tiny sizes

Each row runs ddpx through its real command line (``python -m ddpx recipe ... --tracking none``)
or, for the throughput ratio, beside a plain PyTorch loop in this process:

- **backend and devices**: ``--backend auto`` picks NCCL on a GPU machine and every rank trains on
  ``cuda:<LOCAL_RANK>`` (each rank reports its device through ``gpu_check_probe.py``);
- **GPU against CPU**: the synthetic MLP on one GPU rank, and on one CPU rank with gloo: held-out
  accuracy within ``MATCH`` of each other; a world of 2 on NCCL where the machine has 2 GPUs;
- **precision**: bf16 and fp16 (fp16 with loss scaling) against fp32 on the same run: the first
  epoch's training loss within ``FIRST_LOSS`` (relative), no NaN, held-out accuracy within ``MATCH``;
- **MNIST to 99 %**: ``mnist_convnet`` with the fast data path on one GPU; wall time from launch
  to the end of the run that holds 99.0 % held-out accuracy;
- **the fast image path never waits for the GPU**: with CUDA's sync debug mode set to error, the
  fast path builds training batches (a copy that blocks the host raises);
- **ResNet-18 throughput**: images/s of ``cifar10_resnet18`` (50 000 generated CIFAR-shaped images,
  4 epochs, the median of epochs 2–4) through ddpx against a plain loop of the same model,
  batch, precision and training batches (the fast path's crop, flip and normalisation) in this
  process (the median of 6 windows of 200 steps, 3 before ddpx's run and 3 after it, so that a
  machine whose speed drifts during the row moves both sides alike): the CIFAR stem with channels-last and
  ``torch.compile`` on and off (the goal: a ratio of at least 0.97; the row prints both spreads),
  and the recipe's default ImageNet stem, shown and not judged (its step is launch-bound);
- **a step, traced**: ``torch.profiler`` over 20 steps of ddpx (``train.profile_steps``) and of the
  plain loop (the CIFAR stem, channels-last): the host's and the device's milliseconds per step,
  shown, not judged; ``--out DIR`` keeps both operator tables (``ddpx_ops.txt``, ``plain_ops.txt``);
- **molecules/s**: ``bbbp_rnn`` and ``bbbp_dmpnn`` training throughput on the GPU against the CPU.

``--dry`` runs every row on the CPU with tiny sizes (gloo), so the script keeps working between
GPU sessions; rows that need a GPU say "dry: CPU", and rows whose data is absent say so. Of the
ResNet rows, a dry run walks the ImageNet stem's (its ddpx run also serves the traced row): the
same code, a sixteenth of the CIFAR stem's work on a CPU. Needs
neither MLflow nor Optuna; RDKit and Chemprop only for the molecule rows (skipped without them).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the small real-format file writers the tests use

MATCH = 0.02  # held-out accuracy: GPU against CPU, bf16/fp16 against fp32
FIRST_LOSS = 0.05  # relative difference of the first epoch's training loss, mixed precision against fp32


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
        "DDPX_PLUGINS": "gpu_check_probe",
        "DDPX_GPU_CHECK_PROBE": str(probe),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
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
    epochs = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    devices = [json.loads(p.read_text()) for p in sorted(probe.glob("rank-*.json"))]
    return Run(json.loads((run_dir / "summary.json").read_text()), epochs, wall, devices, run_dir)


def heldout(run: Run) -> float:
    return run.summary["heldout"][f"heldout_{run.summary['metric']}"]


# (stem, channels-last, torch.compile): the CIFAR stem is the GPU's work (about 16x the ImageNet
# stem's per image), so its ratios measure ddpx; the ImageNet stem's step is a few milliseconds of
# kernel launches, so its ratio follows the host's speed and is shown, not judged
RESNET_ROWS = (("cifar", True, False), ("cifar", False, False), ("cifar", True, True), ("imagenet", True, False))
# a dry run walks the code path with the ImageNet stem: the same ddpx and plain loops, a 16th of
# the CIFAR stem's work on the CPU (a second a step at batch 8 there)
DRY_RESNET_ROW = RESNET_ROWS[3]
DRY_PROFILE_STEPS = 2


def cpu_env() -> dict:
    return {"CUDA_VISIBLE_DEVICES": ""}


class Checks:
    """The rows, each a method; ``dry`` runs them on the CPU with tiny sizes."""

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
        if self.dry:  # every dry run on 2 CPU ranks: the rows that ask for the same run share one
            kwargs["nproc"] = 2
        key = (recipe, tuple(overrides), tuple(sorted(kwargs.items())))
        if key not in self.done:
            env = cpu_env() if self.dry else None
            self.done[key] = ddpx(recipe, overrides, self.workdir, env=env, **kwargs)
        return self.done[key]

    def on_cpu(self, recipe, overrides) -> Run:
        """The same run on one CPU rank with gloo (on a dry run, the run itself)."""
        return (
            self.run(recipe, overrides)
            if self.dry
            else ddpx(recipe, overrides, self.workdir, backend="gloo", env=cpu_env())
        )

    def backend_and_devices(self) -> list[Row]:
        nproc = max(self.gpus, 1) if not self.dry else 2
        run = self.run("mlp_synthetic", self.mlp, nproc=nproc)
        devices = [d["device"] for d in sorted(run.devices, key=lambda d: d["rank"])]
        want = (
            [f"cuda:{d['local_rank']}" for d in sorted(run.devices, key=lambda d: d["rank"])]
            if self.gpus
            else ["cpu"] * nproc
        )
        name = {d["name"] for d in run.devices}
        ok = devices == want and len(devices) == nproc
        return [
            Row(
                "auto backend: one device per rank",
                ", ".join(devices),
                "PASS" if ok else "FAIL",
                f"{self.where}; {nproc} rank(s); {', '.join(sorted(name))}",
            )
        ]

    def gpu_against_cpu(self) -> list[Row]:
        here = self.run("mlp_synthetic", self.mlp)
        cpu = self.on_cpu("mlp_synthetic", self.mlp)
        diff = abs(heldout(here) - heldout(cpu))
        rows = [
            Row(
                "synthetic MLP, 1 rank: GPU against CPU",
                f"{heldout(here):.4f} vs {heldout(cpu):.4f}",
                "PASS" if diff <= MATCH else "FAIL",
                f"{self.where}; within {MATCH}",
            )
        ]
        if self.gpus >= 2:
            two = self.run("mlp_synthetic", self.mlp, nproc=2)
            ok = abs(heldout(two) - heldout(cpu)) <= MATCH
            rows.append(
                Row(
                    "synthetic MLP, 2 ranks on NCCL",
                    f"{heldout(two):.4f}",
                    "PASS" if ok else "FAIL",
                    f"against 1 CPU rank within {MATCH}",
                )
            )
        else:
            rows.append(
                Row(
                    "synthetic MLP, 2 ranks on NCCL",
                    "not run",
                    "SKIP",
                    "dry: CPU" if self.dry else f"this machine has {self.gpus} GPU",
                )
            )
        return rows

    def precision(self) -> list[Row]:
        fp32 = self.run("mlp_synthetic", self.mlp)
        rows = []
        for precision in ("bf16", "fp16"):
            check = "fp16 with loss scaling against fp32" if precision == "fp16" else f"{precision} against fp32"
            if precision == "fp16" and not self.gpus:
                rows.append(Row(check, "not run", "SKIP", "fp16 needs a GPU"))
                continue
            mixed = self.run("mlp_synthetic", [*self.mlp, f"train.precision={precision}"])
            first, ref = mixed.epochs[0]["train_loss"], fp32.epochs[0]["train_loss"]
            finite = all(math.isfinite(e["train_loss"]) for e in mixed.epochs)
            ok = finite and abs(first - ref) <= FIRST_LOSS * abs(ref) and abs(heldout(mixed) - heldout(fp32)) <= MATCH
            rows.append(
                Row(
                    check,
                    f"loss {first:.4f} vs {ref:.4f}; held-out {heldout(mixed):.4f} vs {heldout(fp32):.4f}",
                    "PASS" if ok else "FAIL",
                    f"{self.where}; first loss within {FIRST_LOSS:.0%}, held-out within {MATCH}, no NaN",
                )
            )
        return rows

    def mnist(self) -> list[Row]:
        raw = (
            next((p for p in (self.data / "mnist", self.data / "MNIST" / "raw") if p.is_dir()), None)
            if self.data
            else None
        )
        if raw is None or self.dry:
            return [
                Row(
                    "MNIST: launch to 99.0 % held-out",
                    "not run",
                    "SKIP",
                    "dry: CPU" if self.dry else "no MNIST under --data",
                )
            ]
        root = self.workdir / "mnist"
        (root / "MNIST" / "raw").mkdir(parents=True, exist_ok=True)
        for f in raw.iterdir():  # the published files are gzipped; torchvision reads them unpacked
            unpacked = gzip.decompress(f.read_bytes()) if f.suffix == ".gz" else f.read_bytes()
            (root / "MNIST" / "raw" / f.name.removesuffix(".gz")).write_bytes(unpacked)
        for epochs in (1, 2, 3, 5):
            run = self.run("mnist_convnet", [f"dataset.root={root}", f"train.max_epochs={epochs}", "train.patience=0"])
            if heldout(run) >= 0.99:
                return [
                    Row(
                        "MNIST: launch to 99.0 % held-out",
                        f"{run.wall_s:.1f} s",
                        "PASS",
                        f"{epochs} epoch(s), held-out {heldout(run):.4f}, mnist_convnet, fast path",
                    )
                ]
        return [Row("MNIST: launch to 99.0 % held-out", f"{heldout(run):.4f} after 5 epochs", "FAIL", "")]

    def fast_path_sync(self) -> list[Row]:
        """The fast image path builds a training batch without waiting for the GPU: with CUDA's
        sync debug mode set to error, any copy or read that would block the host raises."""
        import torch

        from ddpx.plugins.vision.fast_path import DeviceImages

        check = "fast image path: a batch without waiting for the GPU"
        if not self.gpus:
            return [Row(check, "not run", "SKIP", "dry: CPU" if self.dry else "needs a GPU")]
        device = torch.device("cuda")
        images = torch.randint(0, 256, (1024, 3, 32, 32), dtype=torch.uint8)
        data = DeviceImages(
            images, torch.randint(0, 10, (1024,)), [0.5] * 3, [0.25] * 3, crop_padding=4, flip=True, device=device
        )
        data.get_batch(torch.arange(8), device, train=True)  # the normalisation constants' one copy
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            for start in range(0, 1024, 256):
                data.get_batch(torch.arange(start, start + 256), device, train=True)
        except RuntimeError as exc:
            return [Row(check, "waits", "FAIL", str(exc).splitlines()[0][:160])]
        finally:
            torch.cuda.set_sync_debug_mode("default")
        return [Row(check, "no wait in 4 batches", "PASS", "CUDA sync debug mode: error")]

    def cifar(self) -> Path:
        """Generated CIFAR-10 files, written once for every ResNet row (CIFAR-10's 50 000 training
        images: 195 steps an epoch at batch 256)."""
        root = self.workdir / "cifar"
        if not root.is_dir():
            from image_files import write_cifar10

            n, n_test = (100, 20) if self.dry else (50000, 100)
            write_cifar10(root, n_per_batch=n // 5, n_test=n_test)
        return root

    def resnet_run(
        self, stem: str, batch: int, *, epochs: int, channels_last: bool, compile_: bool, profile_steps: int
    ) -> Run:
        """``cifar10_resnet18`` on the generated CIFAR files (on a dry run the throughput row and
        the traced row ask for the same run, so one serves both)."""
        keys = [
            f"dataset.root={self.cifar()}",
            "dataset.verify=false",
            f"train.max_epochs={epochs}",
            f"train.batch_size={batch}",
            f"model.stem={stem}",
            f"train.channels_last={str(channels_last).lower()}",
            f"train.compile={str(compile_).lower()}",
            "train.patience=0",
            *([f"train.profile_steps={profile_steps}"] if profile_steps else []),
            *(["train.precision=bf16"] if self.gpus else []),
        ]
        return self.run("cifar10_resnet18", keys)

    def resnet_throughput(self) -> Iterator[Row]:
        from gpu_check_loops import plain_resnet_rates

        batch = 8 if self.dry else 256
        for stem, channels_last, compile_ in RESNET_ROWS:
            name = (
                f"ResNet-18, {stem} stem, channels-last {'on' if channels_last else 'off'}, torch.compile "
                f"{'on' if compile_ else 'off'}"
            )
            if self.dry and (stem, channels_last, compile_) != DRY_RESNET_ROW:  # on a dry run one row walks the path
                yield Row(name, "not run", "SKIP", "dry: CPU")
                continue
            # the plain loop's windows before and after ddpx's run (its model built and warmed once): a
            # machine whose speed drifts during the row moves both halves, and their median sits where ddpx ran
            before, run, after = plain_resnet_rates(
                batch,
                stem=stem,
                windows=1 if self.dry else 3,
                steps=2 if self.dry else 200,
                warmup=1 if self.dry else 30,
                channels_last=channels_last,
                compile_=compile_,
                bf16=bool(self.gpus),
                between=lambda stem=stem, channels_last=channels_last, compile_=compile_: self.resnet_run(
                    stem,
                    batch,
                    epochs=2 if self.dry else 4,
                    channels_last=channels_last,
                    compile_=compile_,
                    profile_steps=DRY_PROFILE_STEPS if self.dry else 0,
                ),
            )
            timed = [e["samples_per_s"] for e in run.epochs[1:] or run.epochs]  # the epochs after the first
            plain_windows = before + after
            ours, plain = statistics.median(timed), statistics.median(plain_windows)
            ratio = ours / plain
            judged = stem == "cifar" and not self.dry
            status = ("PASS" if ratio >= 0.97 else "FAIL") if judged else "INFO"
            why = (
                ""
                if judged
                else " (not judged on a dry run)"
                if self.dry
                else " (not judged: launch-bound, so the host's speed, not ddpx, sets the ratio)"
            )
            spread = (
                f"; epochs {min(timed):,.0f}–{max(timed):,.0f}, plain windows {min(plain_windows):,.0f}–"
                f"{max(plain_windows):,.0f} (medians {statistics.median(before):,.0f} before ddpx's run, "
                f"{statistics.median(after):,.0f} after)"
            )
            yield Row(
                name,
                f"{ours:,.0f} vs {plain:,.0f} images/s ({ratio:.2f})",
                status,
                f"{self.where}; ddpx against a plain loop, medians, goal >= 0.97" + spread + why,
            )

    def resnet_profile(self) -> Iterator[Row]:
        """ddpx's step and the plain loop's, each traced by ``torch.profiler`` (ddpx through
        ``train.profile_steps``): where the host's and the device's time per step go."""
        from gpu_check_loops import plain_resnet_profile

        batch, steps = (8, DRY_PROFILE_STEPS) if self.dry else (256, 20)
        stem = DRY_RESNET_ROW[0] if self.dry else "cifar"
        ours = (
            self.resnet_run(
                stem, batch, epochs=2 if self.dry else 1, channels_last=True, compile_=False, profile_steps=steps
            ).folder
            / "profile"
            / "ops.txt"
        )
        plain = plain_resnet_profile(
            batch,
            stem=stem,
            steps=steps,
            channels_last=True,
            bf16=bool(self.gpus),
            folder=self.workdir / "plain-profile",
        )
        kept = []
        if self.out:
            for side, path in (("ddpx", ours), ("plain", plain)):
                kept.append(self.out / f"{side}_ops.txt")
                shutil.copy(path, kept[-1])
        (host, device), (plain_host, plain_device) = per_step(ours), per_step(plain)
        devices = f", device {device:.2f} vs {plain_device:.2f} ms" if device is not None else ""
        yield Row(
            "ResNet-18 step traced: ddpx against the plain loop",
            f"host {host:.2f} vs {plain_host:.2f} ms" + devices + " per step",
            "INFO",
            f"{self.where}; {stem} stem, channels-last, {steps} steps each; "
            + (", ".join(str(p) for p in kept) if kept else "--out DIR keeps both operator tables"),
        )

    def molecules(self) -> Iterator[Row]:
        bbbp = (
            next((p for p in (self.data / "bbbp" / "BBBP.csv", self.data / "BBBP.csv") if p.is_file()), None)
            if self.data
            else None
        )
        if bbbp is None:
            from smiles_files import write_smiles_csv

            bbbp = write_smiles_csv(self.workdir / "mols.csv", n=200)
        for recipe in ("bbbp_rnn", "bbbp_dmpnn"):
            keys = [
                f"dataset.path={bbbp}",
                "dataset.split=random",
                f"train.max_epochs={1 if self.dry else 2}",
                "train.patience=0",
            ]
            try:
                here = self.run(recipe, keys)
                cpu = self.on_cpu(recipe, keys)
            except RuntimeError as exc:
                yield Row(f"{recipe}: molecules/s", "not run", "SKIP", str(exc)[:120])
                continue
            fast, slow = here.epochs[-1]["samples_per_s"], cpu.epochs[-1]["samples_per_s"]
            yield Row(
                f"{recipe}: molecules/s",
                f"{fast:,.0f} vs {slow:,.0f} on 1 CPU rank ({fast / slow:.1f}x)",
                "PASS",
                f"{self.where}; {bbbp.name}",
            )


def per_step(ops: Path) -> tuple[float, float | None]:
    """The host's and the device's milliseconds per step from the head of a ``profile/ops.txt``."""
    found = re.search(r"per step: ([\d.]+) ms on the host(?:, ([\d.]+) ms of device kernels)?", ops.read_text())
    return float(found.group(1)), float(found.group(2)) if found.group(2) else None


def table(rows: list[Row]) -> str:
    lines = ["| check | result | status | detail |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.check} | {r.result} | {r.status} | {r.detail} |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry", action="store_true", help="the same code paths on CPU, tiny sizes")
    parser.add_argument("--data", type=Path, help="a folder holding mnist/ and bbbp/BBBP.csv (../shared/data)")
    parser.add_argument(
        "--only",
        type=lambda text: text.split(","),
        metavar="CHECKS",
        help="run these checks alone, comma-separated: backend_and_devices, gpu_against_cpu, precision, "
        "mnist, fast_path_sync, resnet_throughput, resnet_profile, molecules",
    )
    parser.add_argument("--out", type=Path, help="a folder for the files a check leaves (the step profiles' tables)")
    args = parser.parse_args()
    args.data = args.data.resolve() if args.data else None  # the runs start in a folder of their own
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    import torch

    name = "dry run on CPU" if args.dry else (torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")
    print(f"{date.today()}: {name}; {platform.machine()}, torch {torch.__version__}\n", flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        checks = Checks(args.dry, args.data, Path(tmp), args.out.resolve() if args.out else None)
        steps = (
            checks.backend_and_devices,
            checks.gpu_against_cpu,
            checks.precision,
            checks.mnist,
            checks.fast_path_sync,
            checks.resnet_throughput,
            checks.resnet_profile,
            checks.molecules,
        )
        for step in (s for s in steps if not args.only or s.__name__ in args.only):
            try:
                for row in step():  # each row printed when it is made: a run cut short keeps them
                    rows.append(row)
                    print(table([row]).splitlines()[-1], flush=True)
            except Exception as exc:  # a broken check is a row, and the others still run
                rows.append(Row(step.__name__, "error", "FAIL", f"{type(exc).__name__}: {exc}"[:200]))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    print("\n" + table(rows))
    return 1 if any(r.status == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
