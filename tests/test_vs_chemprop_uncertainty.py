"""``benchmarks/vs_chemprop/uncertainty.py``: ddpx's uncertainty beside Chemprop's. End to end on
200 molecules of ESOL (real ``chemprop train`` and ``predict``, a real one-rank ddpx run): the
table's rows, every value in the record recomputed here by hand from the arrays each row scored,
those arrays traced back to each program's own files, Chemprop's z-scaling and conformal width
refitted here from its dev answers, one model per program serving two methods; and ``--report``
printing the same table from the record (fast, from a record written here too)."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent  # on sys.path: `benchmarks` importable
sys.path.insert(0, str(ROOT))

from benchmarks.vs_chemprop.small_set import draw_small_set  # noqa: E402
from benchmarks.vs_chemprop.uncertainty_report import format_report  # noqa: E402
from benchmarks.vs_chemprop.uncertainty_scores import set_scores  # noqa: E402

SCRIPT = ROOT / "benchmarks" / "vs_chemprop" / "uncertainty.py"
ESOL = ROOT.parent / "shared" / "data" / "moleculenet" / "ESOL_delaney-processed.csv"


def run_script(*args: str, timeout: float) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def by_hand(rows: pd.DataFrame) -> dict:
    """The scores of one scored file, from its columns, written out here."""
    y = rows["target"].to_numpy()
    if "variance" in rows:
        m, v = rows["mean"].to_numpy(), rows["variance"].to_numpy()
        nll = np.mean(0.5 * np.log(2 * math.pi * v) + (y - m) ** 2 / (2 * v))
        return {"rmse": math.sqrt(np.mean((y - m) ** 2)), "nll": nll}
    lower, upper = rows["lower"].to_numpy(), rows["upper"].to_numpy()
    return {"coverage": np.mean((lower <= y) & (y <= upper)), "width": np.mean(upper - lower)}


@pytest.mark.slow
def test_both_programs_are_scored_alike_from_their_own_answers(tmp_path):
    pytest.importorskip("chemprop", reason="the benchmark runs Chemprop beside ddpx")
    if not ESOL.is_file():
        pytest.skip(f"needs the shared ESOL file at {ESOL}")
    data = draw_small_set(ESOL, tmp_path / "esol200.csv", size=200)
    keep, record_file = tmp_path / "work", tmp_path / "record.json"
    out = run_script(
        *("--set", "esol", "--data", str(data), "--epochs", "3", "--ensemble-size", "2", "--seeds", "0"),
        *("--methods", "mve", "conformal", "--keep", str(keep), "--record", str(record_file)),
        timeout=600,
    )
    record = json.loads(record_file.read_text())
    rows = [line.split(" | ")[:2] for line in out.splitlines() if line.startswith("| mve") or line.startswith("| conf")]
    assert rows == [
        ["| mve", "Chemprop 2.3.1"],
        ["| mve", "ddpx"],
        ["| conformal", "Chemprop 2.3.1"],
        ["| conformal", "ddpx"],
    ]
    assert f"{record['heldout']} held-out molecules" in out and "Goal, ddpx within 2 points of 90 %" in out

    for method in ("mve", "conformal"):
        for program in ("chemprop", "ddpx"):
            (scores,) = record["scores"][method][program]
            scored = pd.read_csv(keep / "scored" / f"esol-seed0-{method}-{program}.csv")
            assert len(scored) == record["heldout"]
            for name, value in by_hand(scored).items():
                assert scores[name] == pytest.approx(value, rel=1e-12), (method, program, name)

    # ddpx's arrays are its run's own columns, and its logged NLL the one scored here
    (run_dir,) = (keep / "ddpx-mve-seed0").iterdir()
    theirs = pd.read_csv(run_dir / "reports" / "heldout_predictions.csv")
    mve = pd.read_csv(keep / "scored" / "esol-seed0-mve-ddpx.csv")
    interval = pd.read_csv(keep / "scored" / "esol-seed0-conformal-ddpx.csv")
    assert np.allclose(mve["mean"], theirs["prediction"]) and np.allclose(
        mve["variance"], theirs["calibrated_variance"]
    )
    assert np.allclose(interval["lower"], theirs["lower"]) and np.allclose(interval["upper"], theirs["upper"])
    logged = json.loads((run_dir / "summary.json").read_text())["uncertainty"]
    assert logged["heldout_nll"] == pytest.approx(record["scores"]["mve"]["ddpx"][0]["nll"], rel=1e-5)

    # Chemprop's: its predict's answers, z-scaled and widened by what its calibrators fit on dev
    predicted = pd.read_csv(keep / "chemprop-mve-seed0" / "predictions.csv")
    target = predicted.columns[1]
    chem = pd.read_csv(keep / "chemprop.csv")
    split = json.loads((keep / "splits.json").read_text())[0]
    n_dev = len(split["val"])
    dev, held = predicted.iloc[:n_dev], predicted.iloc[n_dev:]
    y_dev = chem[target].to_numpy()[split["val"]]
    assert held["smiles"].tolist() == mve["smiles"].tolist()
    assert np.allclose(pd.read_csv(keep / "scored" / "esol-seed0-mve-chemprop.csv")["mean"], held[target])
    ratio = pd.read_csv(keep / "scored" / "esol-seed0-mve-chemprop.csv")["variance"] / held[f"{target}_unc"].to_numpy()
    error = dev[target].to_numpy() - y_dev
    assert ratio.to_numpy() == pytest.approx(np.mean(error**2 / dev[f"{target}_unc"]), rel=2e-3)  # s² of the dev NLL
    half = pd.read_csv(keep / "scored" / "esol-seed0-conformal-chemprop.csv").eval("(upper - lower) / 2")
    scores = np.abs(error) - dev[f"{target}_unc"].to_numpy()
    level = min(1.0, math.ceil((n_dev + 1) * 0.9) / n_dev)
    q = np.quantile(scores, level, method="higher")  # Chemprop's conformal-regression quantile
    assert (half.to_numpy() - held[f"{target}_unc"].to_numpy()) == pytest.approx(q, abs=2e-6)

    # one model per program served both methods
    assert [p.name for p in keep.glob("chemprop-*")] == ["chemprop-mve-seed0"]
    assert len(list((keep / "chemprop-mve-seed0").rglob("best.pt"))) == 1
    assert [p.name for p in keep.glob("ddpx-*")] == ["ddpx-mve-seed0"]

    assert run_script("--report", str(record_file), timeout=60) == out


def a_record(regression: bool) -> dict:
    """A record of two seeds, as the script writes one."""

    def seeds(**values: tuple) -> list[dict]:
        return [{"seed": s, **{name: pair[s] for name, pair in values.items()}} for s in (0, 1)]

    if regression:
        scores = {
            "mve": {
                "chemprop": seeds(rmse=(0.7, 0.9), spearman=(0.2, 0.3)),
                "ddpx": seeds(rmse=(0.6, 0.8), spearman=(0.4, 0.6)),
            },
            "conformal": {
                "chemprop": seeds(coverage=(0.84, 0.86), width=(2.0, 2.2)),
                "ddpx": seeds(coverage=(0.88, 0.89), width=(2.1, 2.3)),
            },
        }
    else:
        scores = {
            "platt": {
                "chemprop": seeds(roc_auc=(0.9, 0.9), ece=(0.05, 0.07)),
                "ddpx": seeds(roc_auc=(0.9, 0.9), ece=(0.07, 0.09)),
            },
            "conformal": {
                "chemprop": [
                    {"seed": 0, "unavailable": "needs 2 labels"},
                    {"seed": 1, "unavailable": "needs 2 labels"},
                ],
                "ddpx": seeds(coverage=(0.7, 0.8), set_size=(1.1, 1.3)),
            },
        }
    return {
        "set": "esol" if regression else "bbbp",
        "regression": regression,
        "data": "a file",
        "dev": 10,
        "heldout": 12,
        "epochs": 3,
        "seeds": [0, 1],
        "ensemble_size": 2,
        "methods": list(scores),
        "measured": "2026-01-01: here",
        "scores": scores,
    }


def test_report_prints_the_table_again_from_a_record(tmp_path):
    path = tmp_path / "record.json"
    path.write_text(json.dumps(a_record(True)))
    out = run_script("--report", str(path), timeout=60)
    assert out == format_report(a_record(True)) + "\n"
    lines = out.splitlines()
    assert lines[0].startswith("2026-01-01: here; esol (a file)") and "12 held-out molecules" in lines[0]
    (mve,) = [line for line in lines if line.startswith("| mve | ddpx |")]
    assert mve.endswith("| 0.7000 ± 0.1414 (0.6000, 0.8000) | — | — | — | 0.5000 ± 0.1414 (0.4000, 0.6000) | — | — |")
    assert "Chemprop 2.3.1 0.8500 (5.0 points below 90 %); ddpx 0.8850 (1.5 points below 90 %)" in out
    assert "within 2 points of 90 %: **met**" in out
    assert "ddpx 0.5000 (mve), Chemprop 0.2500 (mve). Goal, ddpx higher: **met**" in out


def test_a_failed_method_reads_n_a_with_its_reason_and_the_ece_goal_compares_the_best():
    out = format_report(a_record(False))
    (row,) = [line for line in out.splitlines() if line.startswith("| conformal | Chemprop")]
    assert row.endswith("| n/a | n/a | n/a | n/a | n/a |")
    assert "n/a, conformal, Chemprop 2.3.1, seed 1: needs 2 labels" in out
    assert "ddpx 0.0800 (platt), Chemprop 0.0600 (platt). Goal, ddpx lower: **not met**" in out
    assert "ddpx 0.7500 (15.0 points below 90 %)" in out and "**not met**" in out


def test_a_set_covers_a_label_when_it_holds_its_class():
    targets = np.array([[1.0, 0.0], [0.0, np.nan], [1.0, 1.0]])
    holds_0 = np.array([[False, True], [True, True], [True, False]])
    holds_1 = np.array([[True, False], [False, True], [False, True]])
    scores = set_scores(targets, holds_0, holds_1)
    assert scores["coverage"] == pytest.approx((2 / 3 + 1) / 2)  # the third molecule's first label is missed
    assert scores["set_size"] == pytest.approx((1.0 + 1.0) / 2)  # the second's NaN cell left out
