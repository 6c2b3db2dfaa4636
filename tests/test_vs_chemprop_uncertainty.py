"""``benchmarks/vs_chemprop/uncertainty.py``: ddpx's uncertainty beside Chemprop's. End to end on
200 molecules of ESOL (real ``chemprop train`` and ``predict``, a real one-rank ddpx run): the
table's rows, every value in the record recomputed here by hand from the arrays each row scored,
those arrays traced back to each program's own files, Chemprop's z-scaling and conformal width
refitted here from its dev answers, one model per program serving two methods. The ensemble rows
(raw and z-scaled; for classification raw and Platt-calibrated) without training, fast: the same
members' answers in each program's files, one ensemble per program serving both rows. ``--report`` printing the same table from the record
(fast, from a record written here too, and from the committed record of before the z-scaled
ensemble row)."""

import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from real_data import ESOL, needs_esol

ROOT = Path(__file__).resolve().parent.parent  # on sys.path: `benchmarks` importable
sys.path.insert(0, str(ROOT))

from benchmarks.vs_chemprop.small_set import draw_small_set  # noqa: E402
from benchmarks.vs_chemprop.uncertainty_report import format_report  # noqa: E402
from benchmarks.vs_chemprop.uncertainty_scores import set_scores  # noqa: E402

SCRIPT = ROOT / "benchmarks" / "vs_chemprop" / "uncertainty.py"
RECORD = ROOT / "benchmarks" / "vs_chemprop" / "uncertainty-lipophilicity_small-2026-11-27.json"


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
@needs_esol
def test_both_programs_are_scored_alike_from_their_own_answers(tmp_path):
    pytest.importorskip("chemprop", reason="the benchmark runs Chemprop beside ddpx")
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

    # --keep again, the work folder as a stop leaves it: ddpx's run cut off before its summary, Chemprop's model
    # and its answers finished; the run goes on from its checkpoint, and Chemprop is neither trained nor asked again
    kept = [next((keep / "chemprop-mve-seed0").rglob("best.pt")), keep / "chemprop-mve-seed0" / "predictions.csv"]
    written = [path.stat().st_mtime_ns for path in kept]
    (run_dir / "summary.json").unlink()
    epochs = (run_dir / "metrics.jsonl").read_text()
    again = tmp_path / "again.json"
    run_script(
        *("--set", "esol", "--data", str(data), "--epochs", "3", "--ensemble-size", "2", "--seeds", "0"),
        *("--methods", "mve", "conformal", "--keep", str(keep), "--record", str(again)),
        timeout=600,
    )
    assert [path.stat().st_mtime_ns for path in kept] == written
    assert (run_dir / "metrics.jsonl").read_text() == epochs, "gone on from its last checkpoint, not trained again"
    assert [p for p in (keep / "ddpx-mve-seed0").iterdir() if (p / "summary.json").is_file()] == [run_dir]
    again_scores = json.loads(again.read_text())["scores"]
    for method, programs in record["scores"].items():  # the same answers, so the same scores
        for program, (first,) in programs.items():
            assert again_scores[method][program] == [pytest.approx(first, rel=1e-9)], (method, program)


def ensemble_answers(rng: np.random.Generator, targets: np.ndarray) -> np.ndarray:
    """Two members' answers ``(2, N, 1)``: a shared error far wider than their spread, so that
    z-scaling on dev widens the members' variance."""
    shared = rng.normal(0.0, 1.0, targets.shape)
    return np.stack([targets + shared + rng.normal(0.0, 0.3, targets.shape) for _ in range(2)]).astype(np.float32)


def both_ensemble_rows(monkeypatch, tmp_path, set_name, kind, names, rows, targets, predicted, run_dir):
    """Each program's one ensemble (Chemprop's answers, ddpx's run folder of ``kind``) scored for the
    ``ensemble`` row and the ``kind`` row, no model trained: the scores, and the arrays each row scored."""
    import benchmarks.vs_chemprop.uncertainty_chemprop as chemprop_side
    import benchmarks.vs_chemprop.uncertainty_ddpx as ddpx_side
    from benchmarks.vs_chemprop.uncertainty import scored

    def no_second_model(*args, **kwargs):
        raise AssertionError("a second model was asked for")

    monkeypatch.setattr(chemprop_side, "chemprop_model", no_second_model)
    monkeypatch.setattr(ddpx_side, "ddpx_run", no_second_model)
    models = {("chemprop", "ensemble"): predicted, ("ddpx", kind): run_dir}
    context = SimpleNamespace(
        args=SimpleNamespace(set=set_name, ensemble_size=2, epochs=3),
        data=tmp_path / f"{set_name}.csv",
        names=names,
        rows=rows,
        targets=targets,
    )
    results = {
        (method, program): scored(method, program, 0, context, models)  # ddpx's: checked against what it logged
        for method in ("ensemble", kind)
        for program in ("chemprop", "ddpx")
    }
    arrays = {key: pd.read_csv(tmp_path / "scored" / f"{set_name}-seed0-{key[0]}-{key[1]}.csv") for key in results}
    return results, arrays


def test_one_ensemble_per_program_serves_its_raw_and_its_z_scaled_row(tmp_path, monkeypatch):
    """The regression ensemble rows without training: the same two members' answers given to the
    benchmark as Chemprop's ``predict`` writes an ensemble's (the mean, the members' variance as
    ``_unc``) and as a ddpx run z-scaled on dev records them (ddpx's own writers: the ensemble's
    mean and spread, its calibration, ``heldout_predictions.csv`` and the logged values). Each
    program's one model serves both rows; the same answers give the same scores on both sides."""
    pytest.importorskip("chemprop", reason="Chemprop's own zscaling calibrator")
    import torch

    import benchmarks.vs_chemprop.uncertainty_chemprop as chemprop_side
    import benchmarks.vs_chemprop.uncertainty_ddpx as ddpx_side
    from benchmarks.vs_chemprop.uncertainty import METHODS
    from ddpx.contract.outputs import ensemble_answer_loss
    from ddpx.rank.loop.ensemble import mean_of
    from ddpx.rank.loop.evaluation import Predictions
    from ddpx.records.reports import heldout_reports
    from ddpx.records.uncertainty_reports import record_uncertainty

    assert METHODS[True][:3] == ["mve", "ensemble", "ensemble_zscaling"]
    rng = np.random.default_rng(0)
    y_dev, y_held = (rng.normal(-3.0, 2.0, (n, 1)).astype(np.float32).astype(np.float64) for n in (30, 25))
    dev, held = ensemble_answers(rng, y_dev), ensemble_answers(rng, y_held)
    names, smiles = ["logS"], ["C" * (i + 1) for i in range(55)]
    rows = chemprop_side.PredictionRows(tmp_path / "predict.csv", smiles[:30], smiles[30:], y_dev)

    # Chemprop's answers: predictions.csv of the dev rows, then the held-out rows
    both = np.concatenate([dev, held], axis=1).astype(np.float64)
    answers = pd.DataFrame({"smiles": smiles, "logS": both.mean(0)[:, 0], "logS_unc": both.var(0)[:, 0]})
    answers.to_csv(tmp_path / "predictions.csv", index=False)
    predicted = chemprop_side.read_predictions(tmp_path / "predictions.csv", names, rows)

    # ddpx's: the run's records of the members' mean, spread squared and z-scaling fitted on dev
    run_dir = tmp_path / "ddpx-ensemble_zscaling-seed0" / "run"
    (_, dev_answer, _), (_, held_answer, spread) = (
        mean_of([Predictions(torch.from_numpy(m), torch.from_numpy(y).float()) for m in members], "mse")
        for members, y in ((dev, y_dev), (held, y_held))
    )
    record = record_uncertainty(dev_answer, held_answer, ensemble_answer_loss("mse"), {"labels": names}, "zscaling")
    heldout_reports(held_answer, "gaussian_nll", {"labels": names}, run_dir / "reports", spread.numpy(), record.columns)
    (run_dir / "summary.json").write_text(json.dumps({"uncertainty": record.metrics}))

    results, arrays = both_ensemble_rows(
        monkeypatch, tmp_path, "esol", "ensemble_zscaling", names, rows, y_held, predicted, run_dir
    )
    for key, scores in results.items():
        for name, value in by_hand(arrays[key]).items():
            assert scores[name] == pytest.approx(value, rel=1e-12), (key, name)
    for method in ("ensemble", "ensemble_zscaling"):  # the same answers, the same scores
        for name in ("rmse", "nll", "miscalibration_area", "ence", "spearman"):
            chemprop, ddpx = results[method, "chemprop"][name], results[method, "ddpx"][name]
            assert ddpx == pytest.approx(chemprop, rel=1e-4, abs=1e-9), (method, name)

    # ddpx.s one run: the raw spread squared, and the calibrated variance, s² of the dev errors over it
    written = pd.read_csv(run_dir / "reports" / "heldout_predictions.csv")
    raw, scaled = arrays["ensemble", "ddpx"]["variance"], arrays["ensemble_zscaling", "ddpx"]["variance"]
    assert np.allclose(raw, written["ensemble_spread"] ** 2) and np.allclose(raw, written["variance"], rtol=1e-5)
    assert np.allclose(scaled, written["calibrated_variance"])
    dev_mean, dev_var = dev.astype(np.float64).mean(0), dev.astype(np.float64).var(0)
    s2 = np.mean((y_dev - dev_mean) ** 2 / dev_var)
    assert not np.isclose(s2, 1.0, rtol=0.5) and np.allclose(scaled / raw, s2, rtol=1e-4)
    logged = record.metrics
    assert results["ensemble", "ddpx"]["nll"] == pytest.approx(logged["heldout_nll_uncalibrated"], rel=1e-5)
    assert results["ensemble_zscaling", "ddpx"]["nll"] == pytest.approx(logged["heldout_nll"], rel=1e-5)
    with pytest.raises(SystemExit, match="ddpx logged"):  # the raw row's scores are not the calibrated ones
        ddpx_side.check_logged(run_dir, "ensemble_zscaling", results["ensemble", "ddpx"])

    # Chemprop's one ensemble: its members' variance, and that variance z-scaled by its calibrator on dev
    chem_raw, chem_scaled = (arrays[m, "chemprop"]["variance"].to_numpy() for m in ("ensemble", "ensemble_zscaling"))
    assert np.allclose(chem_raw, answers["logS_unc"][30:])
    ratio = np.mean((answers["logS"][:30].to_numpy() - y_dev[:, 0]) ** 2 / answers["logS_unc"][:30].to_numpy())
    assert chem_scaled / chem_raw == pytest.approx(ratio, rel=2e-3)  # s² of the dev NLL

    # the ensemble run that serves both rows is asked for z-scaling (a classification ensemble: platt)
    command = ddpx_side.ddpx_command("esol_dmpnn", tmp_path / "esol.csv", (), "ensemble_zscaling", 0, 3, 2)
    assert "train.calibration=zscaling" in command and "train.ensemble_size=2" in command
    command = ddpx_side.ddpx_command("bbbp_dmpnn", tmp_path / "bbbp.csv", (), "ensemble_platt", 0, 3, 2)
    assert "train.calibration=platt" in command and "train.ensemble_size=2" in command


def test_one_classification_ensemble_per_program_serves_its_raw_and_its_platt_row(tmp_path, monkeypatch):
    """The classification ensemble rows without training: two members' logits given to the benchmark
    as Chemprop's ``predict`` writes an ensemble's mean probability and as a ddpx run calibrated with
    Platt on dev records them (ddpx's own writers). The ``ensemble`` rows read the raw mean on both
    sides, alike; the ``ensemble_platt`` rows each program's Platt fitted on the dev mean (Chemprop's
    ``PlattCalibrator`` on the 0/1 labels, as its ``predict`` does; ddpx's on Platt's targets); and the ECE
    goal counts the ensemble's calibrated row among the calibrated models."""
    pytest.importorskip("chemprop", reason="Chemprop's own platt calibrator")
    import torch
    from sklearn.linear_model import LogisticRegression

    import benchmarks.vs_chemprop.uncertainty_chemprop as chemprop_side
    from benchmarks.vs_chemprop.uncertainty import METHODS, MODEL_OF
    from benchmarks.vs_chemprop.uncertainty_report import goal_lines
    from ddpx.rank.loop.ensemble import mean_of
    from ddpx.rank.loop.evaluation import Predictions
    from ddpx.records.calibration import platt_line
    from ddpx.records.reports import heldout_reports
    from ddpx.records.uncertainty_reports import record_uncertainty

    assert METHODS[False][:2] == ["ensemble", "ensemble_platt"]
    assert MODEL_OF[False, "ensemble"] == MODEL_OF[False, "ensemble_platt"]  # one model per program
    rng = np.random.default_rng(1)
    y_dev, y_held = (rng.integers(0, 2, (n, 1)).astype(np.float64) for n in (60, 50))
    # overconfident members: their logits three times what would be calibrated
    members = {
        n: [3 * (2 * y[:, 0] - 1) * rng.uniform(0.2, 1.5, len(y)) + rng.normal(0, 2.5, len(y)) for _ in (0, 1)]
        for n, y in (("dev", y_dev), ("held", y_held))
    }
    names, smiles = ["p_np"], ["C" * (i + 1) for i in range(110)]
    rows = chemprop_side.PredictionRows(tmp_path / "predict.csv", smiles[:60], smiles[60:], y_dev)

    # ddpx's: the members' mean logit, Platt fitted on the dev mean, the run's own files (one label: (N,))
    run_dir = tmp_path / "ddpx-ensemble_platt-seed0" / "run"
    (_, dev_answer, _), (_, held_answer, spread) = (
        mean_of(
            [Predictions(torch.from_numpy(m).float(), torch.from_numpy(y[:, 0]).float()) for m in ms], "bce_with_logits"
        )
        for ms, y in ((members["dev"], y_dev), (members["held"], y_held))
    )
    record = record_uncertainty(dev_answer, held_answer, "bce_with_logits", {"labels": names}, "platt")
    heldout_reports(
        held_answer, "bce_with_logits", {"labels": names}, run_dir / "reports", spread.numpy(), record.columns
    )
    (run_dir / "summary.json").write_text(json.dumps({"uncertainty": record.metrics}))

    # Chemprop's: predictions.csv of the dev rows, then the held-out rows, the mean probability of the same logits
    both = np.concatenate([dev_answer.outputs.numpy(), held_answer.outputs.numpy()]).astype(np.float64)
    pd.DataFrame({"smiles": smiles, "p_np": 1 / (1 + np.exp(-both))}).to_csv(tmp_path / "predictions.csv", index=False)
    predicted = chemprop_side.read_predictions(tmp_path / "predictions.csv", names, rows)

    results, arrays = both_ensemble_rows(
        monkeypatch, tmp_path, "bbbp", "ensemble_platt", names, rows, y_held, predicted, run_dir
    )
    raw = {
        program: arrays["ensemble", program].filter(like="probability").to_numpy() for program in ("chemprop", "ddpx")
    }
    assert np.allclose(raw["chemprop"], raw["ddpx"], atol=1e-6)  # the raw mean, alike
    platt = {p: arrays["ensemble_platt", p].filter(like="probability").to_numpy() for p in ("chemprop", "ddpx")}
    dev_mean, held_mean = dev_answer.outputs.numpy().astype(np.float64), held_answer.outputs.numpy().astype(np.float64)
    ddpx_line = platt_line(dev_mean, y_dev[:, 0])  # Platt's targets: never 0 or 1
    assert np.allclose(platt["ddpx"][:, 0], 1 / (1 + np.exp(-(ddpx_line["a"] * held_mean + ddpx_line["b"]))))
    # Chemprop's predict fits the 0/1 labels themselves: the likeliest line, as an unpenalised logistic fit finds it
    likeliest = LogisticRegression(C=np.inf, tol=1e-10, max_iter=10_000).fit(dev_mean[:, None], y_dev[:, 0])
    assert np.allclose(platt["chemprop"][:, 0], likeliest.predict_proba(held_mean[:, None])[:, 1], atol=2e-3)
    written = pd.read_csv(run_dir / "reports" / "heldout_predictions.csv")
    assert np.allclose(platt["ddpx"][:, 0], written["calibrated_probability"])
    assert results["ensemble_platt", "ddpx"]["ece"] < results["ensemble", "ddpx"]["ece"]  # overconfidence undone
    assert results["ensemble", "ddpx"]["nll"] == pytest.approx(record.metrics["heldout_nll_uncalibrated"], rel=1e-5)

    whole = {
        "regression": False,
        "methods": ["ensemble", "ensemble_platt", "platt"],
        "scores": {
            m: {p: [{"seed": 0, **results.get((m, p), {"ece": 0.5})}] for p in ("chemprop", "ddpx")}
            for m in ("ensemble", "ensemble_platt", "platt")
        },
    }
    goal = goal_lines(whole)[-1]
    assert "the best of each program's platt, ensemble_platt:" in goal and "(ensemble_platt)" in goal, goal


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
            "ensemble_zscaling": {
                "chemprop": seeds(rmse=(0.6, 0.7), nll=(1.2, 1.4)),
                "ddpx": seeds(rmse=(0.6, 0.7), nll=(1.1, 1.3)),
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
    rows = [line.split(" | ")[:3] for line in lines if line.startswith("| ensemble_zscaling")]
    assert rows == [
        ["| ensemble_zscaling", "Chemprop 2.3.1", "the ensemble row's model; `zscaling` fitted on dev"],
        ["| ensemble_zscaling", "ddpx", "`train.ensemble_size=2 train.calibration=zscaling`: `calibrated_variance`"],
    ]


def test_a_record_from_before_the_z_scaled_ensemble_row_prints_the_rows_it_has():
    record = json.loads(RECORD.read_text())
    assert record["methods"] == ["mve", "ensemble", "conformal"]
    out = format_report(record)
    rows = [line.split(" | ")[:2] for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[1:] == [[f"| {m}", p] for m in record["methods"] for p in ("Chemprop 2.3.1", "ddpx")]
    assert "| ensemble | ddpx | `train.ensemble_size=5` (members' spread, squared) | 0.9276 | 96.7252 |" in out


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


def one_seed(record: dict, seed: int, measured: str) -> dict:
    """The part of ``record`` that a run of ``--seeds SEED`` writes."""
    scores = {
        method: {program: [run for run in runs if run["seed"] == seed] for program, runs in by_program.items()}
        for method, by_program in record["scores"].items()
    }
    return {**record, "seeds": [seed], "measured": measured, "scores": scores}


def test_records_of_one_seed_each_report_as_one_table_and_a_seed_twice_is_refused(tmp_path):
    whole = a_record(True)
    paths = [tmp_path / "seed0.json", tmp_path / "seed1.json"]
    for seed, path in enumerate(paths):
        path.write_text(json.dumps(one_seed(whole, seed, whole["measured"])))
    assert run_script("--report", *map(str, paths), timeout=60) == format_report(whole) + "\n"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--report", str(paths[0]), str(paths[0])], capture_output=True)
    assert proc.returncode != 0 and b"a seed is in more than one record" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_a_record_goes_on_where_it_stopped_and_refuses_other_code(tmp_path):
    from benchmarks.vs_chemprop.uncertainty import finished_seeds, resumed

    whole = a_record(True)
    held = json.loads(json.dumps(whole))
    held["scores"]["conformal"]["ddpx"].pop()  # stopped in seed 1, before its last row
    held["measured"] = "2026-01-01: here, commit abc123"
    path = tmp_path / "record.json"
    path.write_text(json.dumps(held))
    args = SimpleNamespace(record=path)
    fresh = {**whole, "measured": "2026-01-02: here, commit abc123", "scores": {}}
    going_on = resumed(fresh, args)
    assert finished_seeds(going_on) == [0]
    assert going_on["scores"] == held["scores"]  # every row kept, seed 1's too
    assert going_on["measured"].startswith("2026-01-01")  # the record it began as
    with pytest.raises(SystemExit, match="other epochs, commit: name another --record file"):
        resumed({**fresh, "epochs": 4, "measured": "2026-01-02: here, commit def456"}, args)
    assert resumed(fresh, SimpleNamespace(record=tmp_path / "new.json")) is fresh


def test_a_stopped_seed_goes_on_at_the_row_it_lacks_and_each_row_is_written_as_it_comes(tmp_path, capsys):
    from benchmarks.vs_chemprop.uncertainty import fill_rows, finished_seeds

    whole = a_record(True)
    held = json.loads(json.dumps(whole))
    held["scores"]["conformal"]["ddpx"].pop()
    held["scores"]["conformal"]["chemprop"].pop()  # stopped in seed 1, before its last two rows
    path = tmp_path / "record.json"
    asked = []

    def row(method, program, seed, models):
        asked.append((method, program, seed))
        assert json.loads(path.read_text())["scores"]["conformal"]["chemprop"][-1]["seed"] == (
            1 if program == "ddpx" else 0
        ), "each row is in the record before the next is asked for"
        return next(run for run in whole["scores"][method][program] if run["seed"] == seed)

    path.write_text(json.dumps(held))
    args = SimpleNamespace(record=path, seeds=[0, 1], methods=list(whole["scores"]))
    filled = fill_rows(held, args, row)
    assert asked == [("conformal", "chemprop", 1), ("conformal", "ddpx", 1)]
    assert filled["scores"] == whole["scores"] and json.loads(path.read_text())["scores"] == whole["scores"]
    assert finished_seeds(filled) == [0, 1]
    assert "seed 1 mve ddpx: kept from" in capsys.readouterr().err


def test_a_chemprop_row_its_calibrator_cannot_make_on_these_dev_labels_trains_no_model(tmp_path, monkeypatch):
    """Chemprop 2.3.1's ``conformal-multilabel`` fails on a dev split where a molecule lacks a label 0 or
    a label 1 (a tensor-size error), and refuses one label, whatever the model answers: the row says why, and no model is
    trained for it; where every dev molecule has both, it is fitted as usual."""
    pytest.importorskip("chemprop", reason="Chemprop's own conformal-multilabel calibrator")
    import benchmarks.vs_chemprop.uncertainty_chemprop as chemprop_side
    from benchmarks.vs_chemprop.uncertainty import scored

    fails = chemprop_side.fails_whatever_the_model
    both = np.array([[0, 1], [1, 0], [1, 0]], dtype=np.float64)
    assert fails("conformal", False, both) is None and fails("platt", False, both[:2] * 0) is None
    assert "must match the size" in fails("conformal", False, np.vstack([both, [[0, 0], [0, 0]]]))
    assert "larger than 1" in fails("conformal", False, both[:, :1])

    def no_model(*args, **kwargs):
        raise AssertionError("a model was trained for a row that cannot be made")

    monkeypatch.setattr(chemprop_side, "chemprop_model", no_model)
    no_zero = np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])  # dev molecules without a label 0
    rows = chemprop_side.PredictionRows(tmp_path / "predict.csv", [], [], no_zero)
    context = SimpleNamespace(args=SimpleNamespace(set="tox21", ensemble_size=2, epochs=3), rows=rows)
    row = scored("conformal", "chemprop", 0, context, {})
    assert row["seed"] == 0 and "conformal-multilabel failed" in row["unavailable"]


def test_a_chemprop_ensemble_cut_off_goes_on_from_its_next_member(tmp_path):
    """An ensemble whose ``chemprop train`` was cut off after member 0 (its ``best.pt`` written,
    member 1 begun): member 0 is kept as it is, member 1 alone is trained again, by a real ``chemprop
    train`` of one model whose weights are seeded as Chemprop seeds member 1 (``--pytorch-seed`` + 1,
    the data seed unchanged), moved into ``model_1``; the ensemble says where it went on; a later
    start trains nothing."""
    pytest.importorskip("chemprop", reason="a real chemprop train")
    from chemprop.models import load_model

    from benchmarks.vs_chemprop.uncertainty_chemprop import finished_members, train_command, train_members

    smiles = (
        ["C" * n for n in range(1, 9)] + ["C" * n + "O" for n in range(1, 9)] + ["O" + "C" * n for n in range(2, 6)]
    )
    (tmp_path / "chemprop.csv").write_text(
        "smiles,y\n" + "".join(f"{s},{0.3 * i - 2.0}\n" for i, s in enumerate(smiles)), encoding="utf-8"
    )
    (tmp_path / "splits.json").write_text(
        json.dumps([{"train": list(range(14)), "val": list(range(14, 17)), "test": list(range(17, 20))}])
    )
    out = tmp_path / "chemprop-ensemble-seed3"
    (out / "model_0").mkdir(parents=True)
    (out / "model_0" / "best.pt").write_bytes(b"member 0, finished by the start that was cut off")
    (out / "model_1" / "checkpoints").mkdir(parents=True)  # member 1 under way when it was cut off
    launched = []

    def command(members: int, where: Path, first: int) -> list[str]:
        launched.append((members, first))
        return train_command(tmp_path, ["y"], 3, 3, "regression", members, where, first)

    assert finished_members(out) == 1
    train_members(command, 2, out, "chemprop train (ensemble, seed 3)")
    assert launched == [(1, 1)]
    assert (out / "model_0" / "best.pt").read_bytes() == b"member 0, finished by the start that was cut off"
    assert sorted(p.name for p in out.iterdir()) == ["model_0", "model_1", "resumed.json"]
    assert load_model(out / "model_1" / "best.pt") is not None  # a model Chemprop wrote
    lines = (out / "model_1" / "config.toml").read_text(encoding="utf-8").splitlines()  # key = value
    config = dict(line.split(" = ", 1) for line in lines if " = " in line)
    assert (config["pytorch-seed"], config["data-seed"], config["ensemble-size"]) == ("4", "3", "1")
    assert json.loads((out / "resumed.json").read_text()) == {"first_member": 1}
    train_members(command, 2, out, "chemprop train (ensemble, seed 3)")
    assert launched == [(1, 1)] and finished_members(out) == 2


def test_a_row_of_an_ensemble_that_went_on_says_so_in_the_report():
    record = a_record(True)
    record["scores"]["ensemble_zscaling"]["chemprop"][1]["members_resumed_from"] = 3
    text = format_report(record)
    assert "ensemble_zscaling, Chemprop 2.3.1, seed 1: cut off after 3 members" in text
    assert text.count("cut off after") == 1
