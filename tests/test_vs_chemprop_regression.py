"""``benchmarks/vs_chemprop``'s regression parts, without training: the small set drawn from a file
(the same molecules on every draw, in file order) and the held-out RMSE and MAE both sides are
scored with."""

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent  # on sys.path: `benchmarks` importable
sys.path.insert(0, str(ROOT))

from benchmarks.vs_chemprop.chemprop_inputs import heldout_scores, rmse_mae  # noqa: E402
from benchmarks.vs_chemprop.report import summary_row  # noqa: E402
from benchmarks.vs_chemprop.small_set import draw_small_set, md5  # noqa: E402


def write_source(path: Path, n: int) -> Path:
    rows = [f"CHEMBL{i},{i / 10:.1f},{'C' * (1 + i % 7)}O" for i in range(n)]
    path.write_bytes(("CMPD_CHEMBLID,exp,smiles\r\n" + "\r\n".join(rows) + "\r\n").encode())
    return path


def test_the_small_set_is_the_same_seeded_draw_in_file_order(tmp_path):
    source = write_source(tmp_path / "source.csv", 50)
    first = draw_small_set(source, tmp_path / "a.csv", size=20, seed=0)
    again = draw_small_set(source, tmp_path / "b" / "again.csv", size=20, seed=0)
    other = draw_small_set(source, tmp_path / "c.csv", size=20, seed=1)
    assert md5(first) == md5(again) != md5(other)
    lines = first.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "CMPD_CHEMBLID,exp,smiles" and len(lines) == 21
    ids = [int(line.split(",")[0].removeprefix("CHEMBL")) for line in lines[1:]]
    assert ids == sorted(set(ids)) and "\r" not in first.read_text(encoding="utf-8")
    with pytest.raises(SystemExit, match="fewer than"):
        draw_small_set(source, tmp_path / "d.csv", size=51)


def test_rmse_and_mae_per_target_over_present_molecules_then_averaged():
    targets = [(1.0, 0.0), (2.0, float("nan")), (4.0, 1.0)]
    predictions = [(1.0, 1.0), (3.0, 5.0), (2.0, 1.0)]
    rmse, mae = rmse_mae(targets, predictions)
    assert rmse == pytest.approx((math.sqrt(5 / 3) + math.sqrt(1 / 2)) / 2)
    assert mae == pytest.approx((1.0 + 0.5) / 2)
    assert heldout_scores(True, [(0.0,), (2.0,)], [(1.0,), (1.0,)]) == {"value": 1.0, "mae": 1.0}
    assert heldout_scores(False, [(0,), (1,)], [(0.2,), (0.7,)]) == {"value": 1.0}


def test_a_regression_row_has_its_mae():
    result = {"value": 0.9, "mae": 0.7, "epoch_s": 1.0, "whole_epoch_s": 1.2, "wall_s": 60.0}
    row = summary_row("ddpx", [result, {**result, "value": 1.1, "mae": 0.9}])
    assert row.startswith("| ddpx | 1.0000 ± 0.1414 | 0.9000, 1.1000 | 0.8000 | 1.00 | 1.20 | 60 | 120 |")
