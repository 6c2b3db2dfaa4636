"""``benchmarks/scale/run.py --report``: the scale table from a record, without measuring anything.
Chemprop's sizes beyond its cap are "not run", a stopped build says so, and what its memory would
come to at the largest size is a sentence marked as extrapolated, never a cell."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "scale" / "run.py"


def row(n: int, chemprop: dict | None) -> dict:
    made = {
        "molecules": n,
        "prepare_wall_s": 30.0,
        "graphs_s": 10.0,
        "targets_s": 5.0,
        "graphs_bytes": 200 * n,
        "targets_bytes": 144 * n,
        "prepare_peak_rss_anon_mb": 400.0,
        "train": {
            "1": {"samples_per_s": 150.0, "epoch_s": 9.0, "wall_s": 20.0, "peak_rss_anon_mb": 500.0},
            "2": {"samples_per_s": 300.0, "epoch_s": 5.0, "wall_s": 15.0, "peak_rss_anon_mb": 450.0},
        },
    }
    if chemprop is not None:
        made["chemprop"] = chemprop
    return made


def report(tmp_path: Path, rows: list[dict]) -> str:
    record = {"machine": "box: 2 CPUs, 24 GiB", "memory_mb": 24 * 1024, "commit": "abc1234", "rows": rows}
    path = tmp_path / "scale.json"
    path.write_text(json.dumps(record))
    done = subprocess.run([sys.executable, str(SCRIPT), "--report", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_table_from_a_record(tmp_path):
    chemprop = {"build_s": 12.5, "peak_rss_anon_mb": 2000.0 / 2**10, "stopped": False, "wall_s": 14.0}
    out = report(tmp_path, [row(2000, None), row(1000, chemprop), row(4000, {"stopped": True, "limit_mb": 20000.0})])
    lines = [line for line in out.splitlines() if line.startswith("| ")]
    assert lines[2].startswith("| 1,000 | 15.0 (10.0 + 5.0) | 344 (200 + 144) | 400; 500 | 150 | 300 | 12.5 |")
    assert "not run | not run |" in lines[3]
    assert lines[4].endswith("| stopped | > 20,000 (stopped) |")  # a record from before builds said how far
    far = {"stopped": True, "limit_mb": 16000.0, "stopped_in": "datapoints", "molecules_made": 950000}
    assert "| stopped | > 16,000 (stopped making datapoints, 950,000 made) |" in report(tmp_path, [row(4000, far)])
    assert "2.0 KiB a molecule" in out and "extrapolated, not measured" in out and "4,000 molecules" in out
    assert "abc1234" in out
    untrained = {**row(8000, None), "train": {}}  # above --train-max: prepared, no epoch
    lines = [line for line in report(tmp_path, [untrained]).splitlines() if line.startswith("| 8,000")]
    assert lines == ["| 8,000 | 15.0 (10.0 + 5.0) | 344 (200 + 144) | 400; — | not run | not run | not run | not run |"]


def test_a_build_says_how_far_it_came_as_it_goes(tmp_path, capsys):
    """Chemprop's build (real, 2.3.1) reports each chunk of datapoints and each phase on stderr; a build
    stopped on the way is read back as the last of them."""
    import numpy as np
    import pytest

    pytest.importorskip("chemprop", reason="Chemprop's own data classes")
    sys.path.insert(0, str(ROOT))
    from benchmarks.scale.chemprop_build import build, how_far

    smiles = ["CCO", "c1ccccc1O", "CC(=O)Nc1ccc(O)cc1", "CCN(CC)CC", "OC(=O)c1ccccc1"] * 8
    data = tmp_path / "moses.csv"
    data.write_text("SMILES\n" + "\n".join(smiles) + "\n")
    targets = tmp_path / "targets"
    targets.mkdir()
    np.save(targets / "part-00000.npy", np.arange(len(smiles) * 3, dtype=np.float32).reshape(-1, 3))
    assert build(data, 40, targets)["molecules"] == 40
    log = tmp_path / "chemprop.log"
    log.write_text(capsys.readouterr().err)
    phases = [json.loads(line)["phase"] for line in log.read_text().splitlines() if line.startswith('{"phase"')]
    assert phases == ["datapoints", "graph cache", "built"]
    assert how_far(log) == {**how_far(log), "phase": "built", "molecules": 40}
    log.write_text(log.read_text().split('{"phase": "graph cache"')[0])  # as if stopped while caching
    assert how_far(log)["phase"] == "datapoints" and how_far(tmp_path / "none.log")["molecules"] == 0
