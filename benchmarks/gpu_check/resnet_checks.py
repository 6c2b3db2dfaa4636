"""The ResNet-18 checks: ddpx's throughput against a plain loop's (:mod:`benchmarks.gpu_check.loops`),
and both loops' steps traced."""

from __future__ import annotations

import re
import shutil
import statistics
from collections.abc import Iterator
from pathlib import Path

from benchmarks.common.environment import use_test_file_writers
from benchmarks.gpu_check.runs import Row, Run, Runs

# (stem, channels-last, torch.compile): the CIFAR stem is the GPU's work (about 16x the ImageNet
# stem's per image), so its ratios measure ddpx; the ImageNet stem's step is a few milliseconds of
# kernel launches, so its ratio follows the host's speed and is shown, not judged
RESNET_ROWS = (("cifar", True, False), ("cifar", False, False), ("cifar", True, True), ("imagenet", True, False))
# a dry run walks the code path with the ImageNet stem: the same ddpx and plain loops, a 16th of
# the CIFAR stem's work on the CPU (a second a step at batch 8 there)
DRY_RESNET_ROW = RESNET_ROWS[3]
DRY_PROFILE_STEPS = 2


def cifar(runs: Runs) -> Path:
    """Generated CIFAR-10 files, written once for every ResNet row (CIFAR-10's 50 000 training
    images: 195 steps an epoch at batch 256)."""
    root = runs.workdir / "cifar"
    if not root.is_dir():
        use_test_file_writers()
        from image_files import write_cifar10

        n, n_test = (100, 20) if runs.dry else (50000, 100)
        write_cifar10(root, n_per_batch=n // 5, n_test=n_test)
    return root


def resnet_run(
    runs: Runs, stem: str, batch: int, *, epochs: int, channels_last: bool, compile_: bool, profile_steps: int
) -> Run:
    """``cifar10_resnet18`` on the generated CIFAR files (on a dry run the throughput row and
    the traced row ask for the same run, so one serves both)."""
    keys = [
        f"dataset.root={cifar(runs)}",
        "dataset.verify=false",
        f"train.max_epochs={epochs}",
        f"train.batch_size={batch}",
        f"model.stem={stem}",
        f"train.channels_last={str(channels_last).lower()}",
        f"train.compile={str(compile_).lower()}",
        "train.patience=0",
        *([f"train.profile_steps={profile_steps}"] if profile_steps else []),
        *(["train.precision=bf16"] if runs.gpus else []),
    ]
    return runs.run("cifar10_resnet18", keys)


def resnet_throughput(runs: Runs) -> Iterator[Row]:
    from benchmarks.gpu_check.loops import plain_resnet_rates

    batch = 8 if runs.dry else 256
    for stem, channels_last, compile_ in RESNET_ROWS:
        name = (
            f"ResNet-18, {stem} stem, channels-last {'on' if channels_last else 'off'}, torch.compile "
            f"{'on' if compile_ else 'off'}"
        )
        if runs.dry and (stem, channels_last, compile_) != DRY_RESNET_ROW:  # on a dry run one row walks the path
            yield Row(name, "not run", "SKIP", "dry: CPU")
            continue
        # the plain loop's windows before and after ddpx's run (its model built and warmed once): a
        # machine whose speed drifts during the row moves both halves, and their median sits where ddpx ran
        before, run, after = plain_resnet_rates(
            batch,
            stem=stem,
            windows=1 if runs.dry else 3,
            steps=2 if runs.dry else 200,
            warmup=1 if runs.dry else 30,
            channels_last=channels_last,
            compile_=compile_,
            bf16=bool(runs.gpus),
            between=lambda stem=stem, channels_last=channels_last, compile_=compile_: resnet_run(
                runs,
                stem,
                batch,
                epochs=2 if runs.dry else 4,
                channels_last=channels_last,
                compile_=compile_,
                profile_steps=DRY_PROFILE_STEPS if runs.dry else 0,
            ),
        )
        timed = [e["samples_per_s"] for e in run.epochs[1:] or run.epochs]  # the epochs after the first
        plain_windows = before + after
        ours, plain = statistics.median(timed), statistics.median(plain_windows)
        ratio = ours / plain
        judged = stem == "cifar" and not runs.dry
        status = ("PASS" if ratio >= 0.97 else "FAIL") if judged else "INFO"
        why = (
            ""
            if judged
            else " (not judged on a dry run)"
            if runs.dry
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
            f"{runs.where}; ddpx against a plain loop, medians, goal >= 0.97" + spread + why,
        )


def resnet_profile(runs: Runs) -> Iterator[Row]:
    """ddpx's step and the plain loop's, each traced by ``torch.profiler`` (ddpx through
    ``train.profile_steps``): where the host's and the device's time per step go."""
    from benchmarks.gpu_check.loops import plain_resnet_profile

    batch, steps = (8, DRY_PROFILE_STEPS) if runs.dry else (256, 20)
    stem = DRY_RESNET_ROW[0] if runs.dry else "cifar"
    ours = (
        resnet_run(
            runs, stem, batch, epochs=2 if runs.dry else 1, channels_last=True, compile_=False, profile_steps=steps
        ).folder
        / "profile"
        / "ops.txt"
    )
    plain = plain_resnet_profile(
        batch,
        stem=stem,
        steps=steps,
        channels_last=True,
        bf16=bool(runs.gpus),
        folder=runs.workdir / "plain-profile",
    )
    kept = []
    if runs.out:
        for side, path in (("ddpx", ours), ("plain", plain)):
            kept.append(runs.out / f"{side}_ops.txt")
            shutil.copy(path, kept[-1])
    (host, device), (plain_host, plain_device) = per_step(ours), per_step(plain)
    devices = f", device {device:.2f} vs {plain_device:.2f} ms" if device is not None else ""
    yield Row(
        "ResNet-18 step traced: ddpx against the plain loop",
        f"host {host:.2f} vs {plain_host:.2f} ms" + devices + " per step",
        "INFO",
        f"{runs.where}; {stem} stem, channels-last, {steps} steps each; "
        + (", ".join(str(p) for p in kept) if kept else "--out DIR keeps both operator tables"),
    )


def per_step(ops: Path) -> tuple[float, float | None]:
    """The host's and the device's milliseconds per step from the head of a ``profile/ops.txt``."""
    found = re.search(r"per step: ([\d.]+) ms on the host(?:, ([\d.]+) ms of device kernels)?", ops.read_text())
    return float(found.group(1)), float(found.group(2)) if found.group(2) else None
