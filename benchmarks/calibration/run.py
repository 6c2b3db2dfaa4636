"""Which targets should ddpx's Platt scaling fit on dev: the 0/1 labels, or Platt's?

Measured on dev only, on the finished runs of a study (``ddpx study run``): for each
classification run, the model's logits on its own dev molecules (the held-out ones are never
read), then for each label with at least 5 dev molecules of each class, cross-fitting: the
calibrator fitted on four fifths of dev answers the fifth (stratified 5-fold, 4 shuffles), and the
out-of-fold answers of all dev molecules are scored together, NLL and ECE (10 bins, ddpx's
evaluators). Calibrators:

- ``none``: the model's own probabilities;
- ``labels``: the logistic regression of the 0/1 labels on the logits, unpenalised (ddpx's
  ``platt`` before Platt's targets; the line ``chemprop predict --calibration-method platt``
  searches for), by the same solver (:func:`ddpx.records.calibration.likeliest_line`);
- ``platt``: the same regression on Platt's targets, ``(N+ + 1)/(N+ + 2)`` and ``1/(N- + 2)``
  (:func:`ddpx.records.calibration.platt_line`, what ``train.calibration=platt`` fits now).

    python benchmarks/calibration/run.py --study benchmarks/studies/moleculenet.toml \\
        --runs ddpx-runs/studies/moleculenet-<digests> --keep logits/ --record platt-targets.json
    python benchmarks/calibration/run.py --report benchmarks/calibration/platt-targets-2026-11-28.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common.provenance import commit
from ddpx.config.study_file import tomllib

METHODS = ("none", "labels", "platt")
FOLDS, SHUFFLES, FEWEST = 5, 4, 5  # 5-fold cross-fitting, 4 shuffles; labels with 5 dev molecules of each class


def fitted(method: str, z: np.ndarray, y: np.ndarray):
    """The calibrator ``method`` fitted on logits ``z`` and 0/1 labels ``y``: logits -> probabilities."""
    from ddpx.records.calibration import likeliest_line, platt_line, sigmoid

    if method == "none":
        return sigmoid
    line = platt_line(z, y) if method == "platt" else likeliest_line(z, y)
    return lambda t: sigmoid(line["a"] * t + line["b"])


def cross_fitted(z: np.ndarray, y: np.ndarray) -> dict[str, dict[str, float]]:
    """Each method's NLL and ECE over the out-of-fold answers of every dev molecule, each the mean over
    the shuffles."""
    from sklearn.model_selection import StratifiedKFold

    from ddpx.records import uncertainty_metrics as um

    scores = {m: {"nll": [], "ece": []} for m in METHODS}
    for shuffle in range(SHUFFLES):
        answers = {m: np.empty(len(y)) for m in METHODS}
        for fit_rows, answer_rows in StratifiedKFold(FOLDS, shuffle=True, random_state=shuffle).split(z, y):
            for m in METHODS:
                answers[m][answer_rows] = fitted(m, z[fit_rows], y[fit_rows])(z[answer_rows])
        for m in METHODS:
            scores[m]["nll"].append(float(um.binary_nll(y[:, None], answers[m][:, None])[0]))
            scores[m]["ece"].append(float(um.binary_ece(y[:, None], answers[m][:, None])[0]))
    return {m: {k: float(np.mean(v)) for k, v in s.items()} for m, s in scores.items()}


def dev_logits(study: dict, study_file: Path, run: dict, splits: dict) -> tuple[np.ndarray, np.ndarray]:
    """The run's model's logits ``(N, T)`` on its dev molecules, and their labels (NaN where missing)."""
    import torch

    from benchmarks.vs_chemprop.chemprop_inputs import ddpx_split
    from ddpx.plugins.smiles.predict import model_outputs
    from ddpx.records.model_export import load_model, read_spec

    chosen = study["sets"][run["set"]]
    candidate = next(c for c in chosen["candidates"] if c.get("name", c["recipe"]) == run["candidate"])
    if run["set"] not in splits:  # the split is the set's, whichever recipe reads it
        overrides = [*study.get("overrides", []), *chosen.get("overrides", []), *candidate.get("overrides", [])]
        splits[run["set"]] = ddpx_split(candidate["recipe"], (study_file.parent / chosen["data"]).resolve(), overrides)
    smiles, labels, _, rows = splits[run["set"]]
    folder = Path(run["run_dir"]) / "model"
    with torch.no_grad():
        z = model_outputs(load_model(folder), read_spec(folder)["task_info"], [smiles[i] for i in rows["val"]])
    y = [labels[i] if isinstance(labels[i], tuple) else (labels[i],) for i in rows["val"]]
    return z.double().numpy().reshape(len(y), -1), np.array(y, dtype=np.float64)


def measure(args: argparse.Namespace) -> dict:
    study = tomllib.loads(args.study.read_text(encoding="utf-8"))
    runs = [json.loads(line) for line in (args.runs / "runs.jsonl").read_text(encoding="utf-8").splitlines()]
    runs = [r for r in runs if r["metric"] == "roc_auc" and (not args.sets or r["set"] in args.sets)]
    record = {
        "study": str(args.study),
        "measured": f"{date.today()}: {platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}, commit {commit()}",
        "folds": FOLDS,
        "shuffles": SHUFFLES,
        "rows": [],
    }
    splits: dict = {}
    for run in runs:
        kept = args.keep / f"{run['set']}-{run['candidate']}-{run['seed']}.npz"
        if not kept.exists():
            z, y = dev_logits(study, args.study, run, splits)
            np.savez(kept, logits=z, labels=y)
        arrays = np.load(kept)
        z, y = arrays["logits"], arrays["labels"]
        for j in range(y.shape[1]):
            present = ~np.isnan(y[:, j])
            positives = int(y[present, j].sum())
            if min(positives, int(present.sum()) - positives) < FEWEST:
                continue
            scores = cross_fitted(z[present, j], y[present, j])
            row = {"set": run["set"], "candidate": run["candidate"], "seed": run["seed"], "label": j}
            record["rows"].append({**row, "dev": int(present.sum()), "positives": positives, "scores": scores})
        print(f"{kept.stem}: {y.shape[1]} label(s)", file=sys.stderr, flush=True)
    return record


def report(record: dict) -> str:
    """One line per set and model: the mean over its seeds and labels of each method's NLL and ECE, then
    how many of the lines Platt's targets beat the labels on."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in record["rows"]:
        groups.setdefault((row["set"], row["candidate"]), []).append(row)
    lines = [
        f"{record['measured']}; study {record['study']}; dev only, {record['folds']}-fold cross-fitting, "
        f"{record['shuffles']} shuffles",
        "",
        "| set | model | label fits | NLL none | NLL labels | NLL Platt's | ECE none | ECE labels | ECE Platt's |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    wins = {"nll": 0, "ece": 0}
    for (name, candidate), rows in groups.items():
        mean = {m: {k: np.mean([r["scores"][m][k] for r in rows]) for k in ("nll", "ece")} for m in METHODS}
        for k in wins:
            wins[k] += mean["platt"][k] < mean["labels"][k]
        cells = [f"{mean[m]['nll']:.4f}" for m in METHODS] + [f"{mean[m]['ece']:.4f}" for m in METHODS]
        lines.append(f"| {name} | {candidate} | {len(rows)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Platt's targets against the 0/1 labels, lower on {wins['nll']} of {len(groups)} models' dev NLL "
        f"and {wins['ece']} of {len(groups)} models' dev ECE.",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--study", type=Path, help="the study file whose runs are measured")
    parser.add_argument("--runs", type=Path, help="the study's records folder (runs.jsonl)")
    parser.add_argument("--sets", nargs="*", help="only these sets (default: every classification set)")
    parser.add_argument("--keep", type=Path, help="a folder for the dev logits, kept between starts")
    parser.add_argument("--record", type=Path, help="write the record here")
    parser.add_argument("--report", type=Path, help="print the table of a record, measuring nothing")
    args = parser.parse_args(argv)
    if not args.report and not (args.study and args.runs and args.keep):
        parser.error("give --study, --runs and --keep to measure, or --report RECORD")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.report:
        record = json.loads(args.report.read_text(encoding="utf-8"))
    else:
        args.keep.mkdir(parents=True, exist_ok=True)
        record = measure(args)
        if args.record:
            args.record.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(report(record))


if __name__ == "__main__":
    main()
