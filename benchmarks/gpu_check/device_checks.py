"""The checks of devices and numbers: the backend and each rank's device, the GPU against the
CPU, mixed precision against fp32."""

from __future__ import annotations

import math

from benchmarks.gpu_check.runs import Row, Runs, heldout

MATCH = 0.02  # held-out accuracy: GPU against CPU, bf16/fp16 against fp32
FIRST_LOSS = 0.05  # relative difference of the first epoch's training loss, mixed precision against fp32


def backend_and_devices(runs: Runs) -> list[Row]:
    nproc = max(runs.gpus, 1) if not runs.dry else 2
    run = runs.run("mlp_synthetic", runs.mlp, nproc=nproc)
    devices = [d["device"] for d in sorted(run.devices, key=lambda d: d["rank"])]
    want = (
        [f"cuda:{d['local_rank']}" for d in sorted(run.devices, key=lambda d: d["rank"])]
        if runs.gpus
        else ["cpu"] * nproc
    )
    name = {d["name"] for d in run.devices}
    ok = devices == want and len(devices) == nproc
    return [
        Row(
            "auto backend: one device per rank",
            ", ".join(devices),
            "PASS" if ok else "FAIL",
            f"{runs.where}; {nproc} rank(s); {', '.join(sorted(name))}",
        )
    ]


def gpu_against_cpu(runs: Runs) -> list[Row]:
    here = runs.run("mlp_synthetic", runs.mlp)
    if runs.dry:  # no GPU to set against the CPU: the run walks the path, and nothing is judged
        return [
            Row("synthetic MLP, 1 rank: GPU against CPU", f"{heldout(here):.4f}", "INFO", "dry: one CPU run (2 ranks)"),
            Row("synthetic MLP, 2 ranks on NCCL", "not run", "SKIP", "dry: CPU"),
        ]
    cpu = runs.on_cpu("mlp_synthetic", runs.mlp)
    diff = abs(heldout(here) - heldout(cpu))
    rows = [
        Row(
            "synthetic MLP, 1 rank: GPU against CPU",
            f"{heldout(here):.4f} vs {heldout(cpu):.4f}",
            "PASS" if diff <= MATCH else "FAIL",
            f"{runs.where}; within {MATCH}",
        )
    ]
    if runs.gpus >= 2:
        two = runs.run("mlp_synthetic", runs.mlp, nproc=2)
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
                f"this machine has {runs.gpus} GPU",
            )
        )
    return rows


def precision(runs: Runs) -> list[Row]:
    fp32 = runs.run("mlp_synthetic", runs.mlp)
    rows = []
    for precision in ("bf16", "fp16"):
        check = "fp16 with loss scaling against fp32" if precision == "fp16" else f"{precision} against fp32"
        if precision == "fp16" and not runs.gpus:
            rows.append(Row(check, "not run", "SKIP", "fp16 needs a GPU"))
            continue
        mixed = runs.run("mlp_synthetic", [*runs.mlp, f"train.precision={precision}"])
        first, ref = mixed.epochs[0]["train_loss"], fp32.epochs[0]["train_loss"]
        finite = all(math.isfinite(e["train_loss"]) for e in mixed.epochs)
        ok = finite and abs(first - ref) <= FIRST_LOSS * abs(ref) and abs(heldout(mixed) - heldout(fp32)) <= MATCH
        rows.append(
            Row(
                check,
                f"loss {first:.4f} vs {ref:.4f}; held-out {heldout(mixed):.4f} vs {heldout(fp32):.4f}",
                "PASS" if ok else "FAIL",
                f"{runs.where}; first loss within {FIRST_LOSS:.0%}, held-out within {MATCH}, no NaN",
            )
        )
    return rows
