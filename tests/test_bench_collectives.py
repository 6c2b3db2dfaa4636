"""``ddpx bench collectives`` on a real 2-rank gloo group, and its argument checks."""

import io
import json

import pytest
from rich.console import Console

from ddpx.plugins.backends.bench_command import parse_bytes, results_table
from ddpx.plugins.backends.collectives import BenchResult, bus_factor, message_sizes


def test_sizes_and_bus_factors_follow_nccl_tests():
    assert parse_bytes("4096") == 4096 and parse_bytes("64K") == 65536 and parse_bytes("16M") == 16 << 20
    assert parse_bytes("1GiB") == 1 << 30
    assert message_sizes(4096, 65536) == [4096, 16384, 65536]
    assert bus_factor("all_reduce", 4) == pytest.approx(1.5) and bus_factor("all_gather", 4) == pytest.approx(0.75)
    assert bus_factor("broadcast", 8) == 1.0


@pytest.mark.slow
def test_collectives_are_timed_on_a_real_process_group(run_ddpx):
    result = run_ddpx(
        "bench", "collectives", "--nproc", "2", "--max-bytes", "64K", "--iters", "3", "--warmup", "1", "--json"
    )
    assert result.returncode == 0, result.output
    report = json.loads(result.stdout)
    assert report["backend"] == "gloo" and report["nproc"] == 2
    rows = report["results"]
    assert [(r["op"], r["size_bytes"]) for r in rows] == [
        (op, size) for op in ("all_reduce", "all_gather", "broadcast") for size in (4096, 16384, 65536)
    ]
    for row in rows:
        assert row["time_us"] > 0
        assert row["algbw_gbps"] == pytest.approx(row["size_bytes"] / (row["time_us"] / 1e6) / 1e9, rel=1e-6)
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * bus_factor(row["op"], 2), rel=1e-9)
    # what the command prints without --json: the same rows as a table
    printed = Console(width=100, record=True, file=io.StringIO())
    printed.print(results_table("gloo", 2, 3, [BenchResult(**row) for row in rows]))
    lines = printed.export_text().splitlines()
    assert lines[0].startswith("collectives: gloo, 2 ranks, 3 iterations") and "busbw (GB/s)" in lines[2]
    assert sum(" broadcast " in line and " 64K " in line for line in lines) == 1


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--nproc", "1"], "--nproc must be at least 2"),
        (["--backend", "nccl"], "--backend nccl needs one GPU per rank"),
        (["--max-bytes", "lots"], "'lots' is not a size"),
        (["--min-bytes", "1M", "--max-bytes", "4K"], "is larger than --max-bytes"),
    ],
)
def test_bad_arguments_are_one_clear_error(ddpx_here, args, fragment):
    result = ddpx_here("bench", "collectives", *args)
    assert result.returncode == 2 and fragment in result.stderr and "Traceback" not in result.output
