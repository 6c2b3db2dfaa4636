"""``benchmarks/gpu_check/run.py --dry``: every check of the GPU script runs its code paths on the CPU,
so the script that checks ddpx's GPU claims keeps working between GPU sessions."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # starts ranks

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_check" / "run.py"
ROWS = [
    "auto backend: one device per rank",
    "synthetic MLP, 1 rank: GPU against CPU",
    "synthetic MLP, 2 ranks on NCCL",
    "bf16 against fp32",
    "fp16 with loss scaling against fp32",
    "MNIST: launch to 99.0 % held-out",
    "fast image path: a batch without waiting for the GPU",
    "ResNet-18, cifar stem, channels-last on, torch.compile off",
    "ResNet-18, cifar stem, channels-last off, torch.compile off",
    "ResNet-18, cifar stem, channels-last on, torch.compile on",
    "ResNet-18, imagenet stem, channels-last on, torch.compile off",
    "ResNet-18 step traced: ddpx against the plain loop",
    "bbbp_rnn: molecules/s",
    "bbbp_dmpnn: molecules/s",
    "moses_pretrain_dmpnn: one epoch",
]


def test_the_dry_run_runs_every_check_on_the_cpu_and_fails_none(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    final = done.stdout.split("\n\n")[-1]
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in final.splitlines()[2:]}
    assert list(rows) == ROWS, final
    streamed = done.stdout.split("\n\n")[-2]  # each row printed when it was made, before the whole table
    assert streamed.splitlines() == final.splitlines()[2:], done.stdout
    assert all(cells[2] in ("PASS", "SKIP", "INFO") for cells in rows.values()), final
    assert rows["auto backend: one device per rank"][1] == "cpu, cpu"  # gloo, one CPU rank each
    assert rows["bf16 against fp32"][2] == "PASS" and "dry: CPU" in rows["bf16 against fp32"][3]
    assert rows["fp16 with loss scaling against fp32"][2] == "SKIP"  # fp16 needs a GPU
    walked_mnist = rows["MNIST: launch to 99.0 % held-out"]  # made images in the published format, gzipped
    assert re.fullmatch(r"[01]\.\d{4} after 1 epoch", walked_mnist[1]) and walked_mnist[2] == "INFO", walked_mnist
    walked = rows["ResNet-18, imagenet stem, channels-last on, torch.compile off"]  # the cheapest on a CPU
    assert " vs " in walked[1] and walked[2] == "INFO"  # ddpx and the plain loop both ran; not judged dry
    assert re.search(r"\(medians [\d,]+ before ddpx's run, [\d,]+ after\)", walked[3]), walked  # timed around it
    assert all(
        rows[f"ResNet-18, cifar stem, {variant}"][2] == "SKIP"
        for variant in (  # one row walks the path
            "channels-last on, torch.compile off",
            "channels-last off, torch.compile off",
            "channels-last on, torch.compile on",
        )
    )
    compared = rows["synthetic MLP, 1 rank: GPU against CPU"]  # no GPU: one run, nothing judged
    assert re.fullmatch(r"[01]\.\d{4}", compared[1]) and compared[2] == "INFO" and "dry: one CPU run" in compared[3], (
        compared
    )
    for recipe in ("bbbp_rnn", "bbbp_dmpnn"):  # both trained (a failed run is a FAIL row); not timed dry
        assert re.fullmatch(r"[\d,]+ on 1 CPU rank", rows[f"{recipe}: molecules/s"][1]), rows[f"{recipe}: molecules/s"]
        assert rows[f"{recipe}: molecules/s"][2] == "INFO"
    pretrained = rows["moses_pretrain_dmpnn: one epoch"]  # prepared on CPU ranks, then one epoch from the caches
    assert re.match(r"[\d.]+ s for 160 molecules \([\d,]+ molecules/s in training\); all 1,584,663", pretrained[1])
    assert pretrained[2] == "INFO" and "prepared in" in pretrained[3] and "projected" in pretrained[3], pretrained
    traced = rows["ResNet-18 step traced: ddpx against the plain loop"]
    assert re.fullmatch(r"host [\d.]+ vs [\d.]+ ms per step", traced[1]) and traced[2] == "INFO"  # no device: no GPU
    assert "imagenet stem" in traced[3]
    for side in ("ddpx", "plain"):  # --out keeps both operator tables
        ops = (tmp_path / f"{side}_ops.txt").read_text()
        assert ops.startswith("2 training steps traced on rank 0 after 7") and "aten::convolution" in ops, side


def test_only_runs_the_checks_it_names(capsys):
    """In this process (the script's main): the one check that starts no run when dry."""
    sys.path.insert(0, str(SCRIPT.parents[2]))
    from benchmarks.gpu_check.run import main

    main(["--dry", "--only", "fast_path_sync"])
    final = capsys.readouterr().out.split("\n\n")[-1]
    assert [line.split(" | ")[0].lstrip("| ") for line in final.splitlines()[2:]] == [
        "fast image path: a batch without waiting for the GPU",
    ], final
    with pytest.raises(SystemExit) as misspelled:
        main(["--dry", "--only", "mnsit"])
    assert misspelled.value.code == 2
    assert "--only: no check named mnsit; the checks: backend_and_devices" in capsys.readouterr().err
