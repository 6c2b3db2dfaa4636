"""``benchmarks/vs_chemprop``'s regression parts, without training: the small set drawn from a file
(the same molecules on every draw, in file order) and the held-out RMSE and MAE both sides are
scored with."""

import json
import math
import subprocess
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


def made_record(tmp_path: Path, seeds: list[int], name: str) -> Path:
    """A parity record of two runs written as run.py writes it, each run's result as it ends."""
    from argparse import Namespace

    from benchmarks.vs_chemprop.parity_record import add_result, new_record

    args = Namespace(
        set="esol", epochs=50, seeds=seeds, runs=["chemprop_loss", "ddpx1"], alternate=True, lockstep=False
    )
    record, path = new_record(args, "ESOL.csv", 113), tmp_path / name
    for turn, seed in enumerate(seeds):
        for position, run in enumerate(["chemprop_loss", "ddpx1"][:: -1 if turn % 2 else 1]):
            value = 0.8 + 0.01 * seed + 0.02 * (run == "ddpx1")
            phases = {"batch_s": 0.1, "forward_s": 0.4, "backward_s": 0.8, "optimizer_s": 0.1}
            result = {"value": value, "mae": value - 0.2, "epoch_s": 2.0, "whole_epoch_s": 2.5, "wall_s": 130.0}
            add_result(record, run, seed, {**result, **phases, "position": position}, path)
    return path


def report(*records: Path) -> subprocess.CompletedProcess:
    script = ROOT / "benchmarks" / "vs_chemprop" / "run.py"
    return subprocess.run([sys.executable, str(script), "--report", *map(str, records)], capture_output=True, text=True)


def test_a_parity_record_prints_its_tables_again_and_records_of_one_seed_each_print_as_one(tmp_path):
    whole = report(made_record(tmp_path, [0, 1], "both.json"))
    apart = report(made_record(tmp_path, [0], "a.json"), made_record(tmp_path, [1], "b.json"))
    assert whole.returncode == 0, whole.stderr
    assert "esol (ESOL.csv), MoleculeNet's scaffold split 80/10/10 as ddpx makes it (113 held-out molecules)" in (
        whole.stdout
    )
    assert "50 epochs, seeds 0 1\n" in whole.stdout
    assert (
        "| Chemprop `chemprop train` (best epoch: lowest val loss, its default) | 0.8050 ± 0.0071 | 0.8000, 0.8100 | 0.6050 |"
        in (whole.stdout)
    )
    assert "| ddpx `esol_dmpnn`, 1 rank, batch 64 (best epoch: lowest dev RMSE, its default) | 0.8250 ± 0.0071 |" in (
        whole.stdout
    )
    assert "| 0 | chemprop_loss | 2.00 | 2.00 | 1.000 |\n| 1 | ddpx1 |" in whole.stdout  # --alternate: who ran first
    # the bar, per ddpx run: its mean against Chemprop's (0.825 against 0.805: +2.5 %)
    assert "- ddpx `esol_dmpnn`, 1 rank, batch 64: 0.8250 against Chemprop's 0.8050, +2.5 % (within 5 %; 2 seeds)" in (
        whole.stdout
    )
    # one seed a record (run at different times, each seed first in its own command): the same tables
    assert apart.returncode == 0 and apart.stdout.split("\n", 1)[1] == whole.stdout.split("\n", 1)[1].replace(
        "| 1 | ddpx1 |", "| 1 | chemprop_loss |"
    )
    twice = report(tmp_path / "a.json", tmp_path / "both.json")
    assert twice.returncode == 1 and "a seed is in more than one record" in twice.stderr


def test_a_parity_record_goes_on_with_its_own_settings_and_refuses_others(tmp_path):
    from argparse import Namespace

    from benchmarks.vs_chemprop.parity_record import going_on, has_result, new_record

    path = made_record(tmp_path, [0, 1], "r.json")
    held = json.loads(path.read_text())
    args = Namespace(
        set="esol", epochs=50, seeds=[0, 1], runs=["chemprop_loss", "ddpx1"], alternate=True, lockstep=False
    )
    again = going_on({**new_record(args, "ESOL.csv", 113), "date": held["date"]}, path)
    assert (
        again == held
        and has_result(again, "ddpx1", 1)
        and not has_result(new_record(args, "ESOL.csv", 113), "ddpx1", 1)
    )
    with pytest.raises(SystemExit, match="a record of other epochs, seeds"):
        going_on(new_record(Namespace(**{**vars(args), "epochs": 30, "seeds": [0]}), "ESOL.csv", 113), path)
