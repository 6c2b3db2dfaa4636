"""Held-out quality of the SMILES recipes on real MoleculeNet files, over seeds, for docs/results.md.

One recipe:

    python benchmarks/moleculenet_quality.py bbbp_rnn --data ~/.cache/ddpx/data/bbbp/BBBP.csv
    python benchmarks/moleculenet_quality.py bbbp_rnn --data .../BBBP.csv --split scaffold dataset.dev_fraction=0.1111111111111111
    python benchmarks/moleculenet_quality.py sider_rnn --data .../sider.csv --seeds 0 1 2

The whole MoleculeNet table (every set on its scaffold split 80/10/10, each model family, beside
the published rows that ``../shared/data/README.md`` quotes for that split):

    python benchmarks/moleculenet_quality.py --table --data-dir ../shared/data --families rnn dmpnn
    python benchmarks/moleculenet_quality.py --table --data-dir ../shared/data --sets esol lipophilicity --seeds 0
    python benchmarks/moleculenet_quality.py --table dataset.canonicalize=true --data-dir ../shared/data --sets clintox --families rnn

Runs each recipe once per seed through the real CLI (exactly what a user runs: ``ddpx recipe
RECIPE dataset.path=... train.seed=S``, 2 ranks through torchrun by default) and prints Markdown:
the held-out metric (ROC-AUC, higher is better; RMSE for the regression sets, lower is better),
best epoch, epochs run and wall time, then mean ± sd over the seeds, and the ensemble of the seeds
(each held-out molecule's probabilities, or predicted values, averaged over the seeds' models).
Every row names the commit it ran on: a row whose training code changed since is measured again
before it is quoted. The header names the torch build and the CPU kernels torch picked here: the
same commit and seed train to other digits under another kernel set (``ATEN_CPU_CAPABILITY=avx2``
reproduces on an AVX-512 machine a row measured on one with AVX2 only).

``--record FILE`` appends each seed's result to FILE and keeps its held-out predictions in a folder
beside it (``results-predictions/`` for ``results.jsonl``); ``--best-of FILE`` then picks, per set, the model with the better mean dev
metric, and ensembles each model family's best model by dev:

    python benchmarks/moleculenet_quality.py --table --data-dir ../shared/data --record results.jsonl
    python benchmarks/moleculenet_quality.py --best-of results.jsonl
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

# set: (file names looked for under --data-dir, its sub-folders included; extra overrides)
SETS = {
    "bbbp": (["BBBP.csv"], []),
    "bace": (["bace.csv"], ["dataset.smiles_column=smiles"]),  # the shared copy names the column `smiles`
    # ClinTox's file writes most approved drugs in charged, differently ordered SMILES: canonicalised,
    # a string model reads the molecule, not the writing (docs/results.md, ClinTox)
    "clintox": (["clintox.csv", "clintox.csv.gz"], ["dataset.canonicalize=true"]),
    "tox21": (["tox21.csv", "tox21.csv.gz"], []),
    "sider": (["sider.csv", "sider.csv.gz"], []),
    "hiv": (["HIV.csv"], []),
    "esol": (["ESOL_delaney-processed.csv", "delaney-processed.csv"], []),
    "lipophilicity": (["Lipophilicity.csv"], []),
}
SCAFFOLD = ["dataset.split=scaffold", "dataset.heldout_fraction=0.1", "dataset.dev_fraction=0.1111111111111111"]
# ../shared/data/README.md: Chemprop's D-MPNN as re-run by GEM, and Uni-Mol, on this split
PUBLISHED = {
    "bbbp": (0.710, 0.729),
    "bace": (0.809, 0.857),
    "clintox": (0.906, 0.919),
    "tox21": (0.759, 0.796),
    "sider": (0.570, None),
    "hiv": (0.771, 0.808),
    "esol": (1.050, 0.788),
    "lipophilicity": (0.683, 0.603),
}


def commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True
        ).stdout.strip()
        return sha + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def threads_text() -> str:
    """CPU arithmetic differs in its last digits between thread counts, and a long run drifts apart:
    every table says how many threads each rank had."""
    import os

    return f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset (torchrun: 1 per rank)')}"


def arithmetic() -> dict[str, str]:
    """The torch build and the CPU kernels it picks here (the ranks inherit the environment, so
    theirs): under another kernel set (``ATEN_CPU_CAPABILITY``) a seed trains to other digits."""
    import torch

    return {"torch": torch.__version__, "cpu_kernels": torch.backends.cpu.get_cpu_capability()}


def arithmetic_text() -> str:
    found = arithmetic()
    return f"torch {found['torch']}, CPU kernels {found['cpu_kernels']}"


def run_seed(recipe: str, data: Path, seed: int, overrides: list[str], args: argparse.Namespace, workdir: Path) -> dict:
    start = time.perf_counter()
    tracking = (
        ["--tracking-uri", f"sqlite:///{workdir / 'mlflow.db'}", "--experiment", f"{recipe}-quality"]
        if args.tracking == "mlflow"
        else ["--tracking", args.tracking]
    )
    cmd = [
        sys.executable,
        "-m",
        "ddpx",
        "recipe",
        recipe,
        "--launcher",
        args.launcher,
        "--nproc",
        str(args.nproc),
        *tracking,
        f"dataset.path={data.resolve()}",
        f"train.seed={seed}",
        *overrides,
    ]
    before = set((workdir / "ddpx-runs").glob("*")) if (workdir / "ddpx-runs").is_dir() else set()
    subprocess.run(cmd, cwd=workdir, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    (run_dir,) = set((workdir / "ddpx-runs").glob("*")) - before
    summary = json.loads((run_dir / "summary.json").read_text())
    metric = summary["metric"]
    return {
        "recipe": recipe,
        "seed": seed,
        "metric": metric,
        "greater_is_better": summary["greater_is_better"],
        "value": summary["heldout"][f"heldout_{metric}"],
        "dev": summary["best_dev"],
        "best_epoch": summary["best_epoch"],
        "epochs": summary["epochs_run"],
        "samples": summary["heldout_samples"],
        "wall_s": wall,
        "predictions": heldout_predictions(run_dir / "reports" / "heldout_predictions.csv"),
    }


def heldout_predictions(path: Path) -> dict[str, list[float]] | None:
    """The run's ``heldout_predictions.csv`` as columns (an empty cell, a missing label, is NaN)."""
    if not path.is_file():
        return None
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        return None
    columns = {name: [float(r[name]) if r[name] != "" else math.nan for r in rows] for name in rows[0]}
    return with_exact_probabilities(columns)


def with_exact_probabilities(columns: dict[str, list[float]]) -> dict[str, list[float]]:
    """Where a file has the logits, its probabilities computed from them in float64: files written
    before 2026-11-26 hold float32 probabilities, 1.0 from a logit of about 17 on (ties the model
    does not make)."""
    from ddpx.records.label_reports import probabilities_of

    for name in [n for n in columns if of_kind(n, "logit")]:
        probability = "probability" + name[len("logit") :]
        if probability in columns:
            columns[probability] = probabilities_of(columns[name]).tolist()
    return columns


def of_kind(name: str, kind: str) -> bool:
    """Whether a predictions column holds ``kind`` (``probability``, or ``probability_<label>``)."""
    return name == kind or name.startswith(kind + "_")


def score_pairs(
    columns: dict[str, list[float]], kinds: tuple[str, ...] = ("probability", "prediction")
) -> list[tuple[str, str]]:
    """``(target column, score column)`` per label: ``target_X`` beside ``probability_X`` or ``prediction_X``
    (the first of ``kinds`` a label has)."""
    pairs: dict[str, str] = {}
    for kind in kinds:
        for name in columns:
            if of_kind(name, kind):
                pairs.setdefault("target" + name[len(kind) :], name)
    return [(target, pairs[target]) for target in sorted(pairs, key=list(columns).index)]


def metric_of(columns: dict[str, list[float]], metric: str) -> float | None:
    """The held-out metric from prediction columns, as ddpx computes it: ROC-AUC per label over the
    molecules that have it (ddpx's own ``label_scores``: labels with one class left out; on the
    logits where the file has them, the scores the run ranked), RMSE per target; the mean over
    labels."""
    import numpy as np

    from ddpx.records.label_reports import label_scores

    pairs = score_pairs(columns, ("logit", "probability", "prediction"))
    targets = np.array([columns[t] for t, _ in pairs]).T
    scores = np.array([columns[s] for _, s in pairs]).T
    if metric == "roc_auc":
        values = [v for _, _, v in label_scores(targets, scores, [s for _, s in pairs])]
    elif metric == "rmse":
        present = ~np.isnan(targets)
        values = [
            float(np.sqrt(np.mean((scores[present[:, j], j] - targets[present[:, j], j]) ** 2)))
            for j in range(len(pairs))
        ]
    else:
        return None
    return float(np.mean(values)) if values else None


def ensemble_value(rows: list[dict]) -> float | None:
    """The held-out metric of the seeds' models as one ensemble: each molecule's probabilities (or
    predicted values) averaged over the seeds, as Chemprop's ``--ensemble-size`` averages its models.
    Each seed's own value is first recomputed from its predictions file and must match the run's."""
    if len(rows) < 2:
        return None
    averaged = seeds_averaged(rows)
    return None if averaged is None else metric_of(averaged, rows[0]["metric"])


def seeds_averaged(rows: list[dict]) -> dict[str, list[float]] | None:
    """The seeds' predictions averaged molecule by molecule, or None where a seed has none or its
    file does not give its run's own value."""
    tables = [r.get("predictions") for r in rows]
    if any(t is None for t in tables):
        return None
    for r, t in zip(rows, tables):
        again = metric_of(t, r["metric"])
        if again is None or abs(again - r["value"]) > 1e-4:
            print(
                f"ensemble left out: seed {r['seed']}'s predictions file gives {again}, its run {r['value']}",
                file=sys.stderr,
            )
            return None
    return averaged(tables)


def averaged(tables: list[dict[str, list[float]]]) -> dict[str, list[float]] | None:
    """Each score column averaged over ``tables``; None unless every table has the same molecules
    (the same targets, in the same order)."""
    import numpy as np

    pairs = score_pairs(tables[0])
    targets = [np.asarray(tables[0][t]) for t, _ in pairs]
    for table in tables[1:]:
        if score_pairs(table) != pairs or not all(
            np.array_equal(np.asarray(table[t]), first, equal_nan=True) for (t, _), first in zip(pairs, targets)
        ):
            print("ensemble left out: the predictions are not of the same held-out molecules", file=sys.stderr)
            return None
    result = {name: column for name, column in tables[0].items() if not of_kind(name, "logit")}
    for _, score_name in pairs:
        result[score_name] = list(np.mean([t[score_name] for t in tables], axis=0))
    return result


def record(rows: list[dict], path: Path | None, **fields) -> None:
    """Append one JSON line per seed to ``path`` (``--record``), for ``--best-of``; the seeds'
    ensemble value goes on each of its seeds' lines, and each seed's held-out predictions into
    ``<record>-predictions/`` beside it (for the ensemble of the families)."""
    if path is None:
        return
    folder = path.with_name(path.stem + "-predictions")
    with path.open("a", encoding="utf-8") as out:
        for r in rows:
            line = {**fields, **{k: v for k, v in r.items() if k != "predictions"}}
            if r.get("predictions"):
                name = f"{fields['set']}-{r['recipe']}-{fields['commit']}-{int(time.time() * 1e6)}-seed{r['seed']}.csv"
                line["predictions_file"] = str(
                    write_predictions(r["predictions"], folder / name).relative_to(path.parent)
                )
            out.write(json.dumps(line) + "\n")


def write_predictions(columns: dict[str, list[float]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(list(columns))
        writer.writerows(zip(*(["" if math.isnan(v) else repr(v) for v in c] for c in columns.values())))
    return path


def mean_text(rows: list[dict], key: str = "value") -> str:
    values = [r[key] for r in rows]
    spread = f" ± {statistics.stdev(values):.4f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.4f}{spread}"


def one_recipe(args: argparse.Namespace) -> None:
    overrides = [*args.overrides, *([f"dataset.split={args.split}"] if args.split else [])]
    with tempfile.TemporaryDirectory() as tmp:
        rows = [run_seed(args.recipe, args.data, seed, overrides, args, Path(tmp)) for seed in args.seeds]
    print(
        f"{date.today()}: {platform.machine()}, python {platform.python_version()}, commit {commit()}, "
        f"{arithmetic_text()}, {threads_text()}; {args.recipe}, split {args.split or 'of the recipe'}, {args.nproc} ranks through {args.launcher}; "
        f"{' '.join(args.overrides)}\n"
    )
    print(f"| seed | held-out {rows[0]['metric']} | best epoch | epochs run | held-out molecules | wall time (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['seed']} | {r['value']:.4f} | {r['best_epoch']} | {r['epochs']} | {r['samples']} | {r['wall_s']:.0f} |"
        )
    print(f"| mean | {mean_text(rows)} | | | | {sum(r['wall_s'] for r in rows):.0f} (total) |")
    print(f"| ensemble of the seeds | {value_text(ensemble_value(rows))} | | | | |")


def find_file(folder: Path, names: list[str]) -> Path | None:
    return next((p for name in names for p in sorted(folder.rglob(name))), None)


def table(args: argparse.Namespace) -> None:
    sha = commit()
    print(
        f"{date.today()}: {platform.machine()}, python {platform.python_version()}, commit {sha}, {arithmetic_text()}, "
        f"{threads_text()}; "
        "scaffold split "
        f"80/10/10, {args.nproc} ranks through {args.launcher}, seeds {' '.join(map(str, args.seeds))}"
        f"{'; ' + ' '.join(args.overrides) if args.overrides else ''}\n"
    )
    print(
        "| set | metric | model | held-out (mean ± sd) | per seed | ensemble of the seeds | dev (mean ± sd) "
        "| wall, all seeds (s) | D-MPNN [GEM] | Uni-Mol | commit |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.sets:
        names, extra = SETS[name]
        data = find_file(args.data_dir, names)
        for family in args.families:
            recipe = f"{name}_{family}"
            if data is None:
                print(
                    f"| {name} | | {family} | not run: no {' or '.join(names)} under {args.data_dir} | | | | | | | {sha} |"
                )
                continue
            with tempfile.TemporaryDirectory() as tmp:
                rows = [
                    run_seed(recipe, data, s, [*SCAFFOLD, *extra, *args.overrides], args, Path(tmp)) for s in args.seeds
                ]
            ensemble = ensemble_value(rows)
            record(
                rows,
                args.record,
                set=name,
                family=family,
                overrides=args.overrides,
                commit=sha,
                date=str(date.today()),
                ensemble=ensemble,
                **arithmetic(),
            )
            dmpnn, unimol = published_text(name)
            per_seed = ", ".join(f"{r['value']:.4f}" for r in rows)
            print(
                f"| {name} | {rows[0]['metric']} | {recipe} | {mean_text(rows)} | {per_seed} | {value_text(ensemble)} | "
                f"{mean_text(rows, 'dev')} | "
                f"{sum(r['wall_s'] for r in rows):.0f} | {dmpnn} | {unimol} | {sha} |",
                flush=True,
            )


def value_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def published_text(name: str) -> tuple[str, str]:
    dmpnn, unimol = (f"{v:.3f}" if v is not None else "—" for v in PUBLISHED[name])
    return dmpnn, unimol


def best_of(path: Path) -> None:
    """Per set, the model (recipe and overrides) with the better mean *dev* metric over its
    seeds, and its held-out value: the choice a user can make without looking at the held-out
    split. Beside it, every candidate's held-out mean, the published rows, and the ensemble of
    each family's best model by dev (their predictions averaged, where ``--record`` kept them)."""
    groups = recorded_models(path)
    print(f"from {path}: per set, the model with the better mean dev metric (chosen without the held-out split)\n")
    print(
        "| set | metric | chosen by dev | held-out (mean ± sd) | seeds | ensemble of its seeds | "
        "candidates: held-out mean (dev mean) | ensemble of each family's best by dev | D-MPNN [GEM] | Uni-Mol "
        "| at or past D-MPNN |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, models in groups.items():
        sign = 1 if next(iter(models.values()))[0]["greater_is_better"] else -1
        by_dev = sorted(models, key=lambda m: -sign * statistics.mean(r["dev"] for r in models[m]))
        rows = models[by_dev[0]]
        held = statistics.mean(r["value"] for r in rows)
        others = "; ".join(
            f"{m}: {statistics.mean(r['value'] for r in rs):.4f} ({statistics.mean(r['dev'] for r in rs):.4f})"
            for m, rs in models.items()
        )
        dmpnn, unimol = published_text(name)
        reached = "yes" if sign * (held - PUBLISHED[name][0]) >= 0 else "no"
        print(
            f"| {name} | {rows[0]['metric']} | {by_dev[0]} | {mean_text(rows)} | {' '.join(str(r['seed']) for r in rows)} | "
            f"{value_text(rows[0].get('ensemble'))} | {others} | {families_text(models, by_dev)} | {dmpnn} | {unimol} "
            f"| {reached} |"
        )


def recorded_models(path: Path) -> dict[str, dict[str, list[dict]]]:
    """set -> model ("recipe overrides...") -> its seeds' records, the latest line per seed, each
    with its predictions where the record kept them."""
    latest: dict[tuple[str, str, int], dict] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            latest[r["set"], " ".join([r["recipe"], *r.get("overrides", [])]), r["seed"]] = r
    groups: dict[str, dict[str, list[dict]]] = {}
    for (set_name, model, _), r in latest.items():
        if r.get("predictions_file"):  # read once, for the line that counts
            r["predictions"] = heldout_predictions(path.parent / r["predictions_file"])
        groups.setdefault(set_name, {}).setdefault(model, []).append(r)
    return groups


def families_text(models: dict[str, list[dict]], by_dev: list[str]) -> str:
    """The held-out metric of the ensemble of each family's best model by dev (equal weight per
    family), and which models; "—" with fewer than two families or without their predictions."""
    best: dict[str, str] = {}
    for model in by_dev:
        best.setdefault(models[model][0]["family"], model)
    if len(best) < 2:
        return "—"
    tables = [seeds_averaged(models[m]) for m in best.values()]
    together = None if any(t is None for t in tables) else averaged(tables)
    if together is None:
        return "—"
    return f"{metric_of(together, models[by_dev[0]][0]['metric']):.4f} ({' + '.join(best.values())})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("recipe", nargs="?", help="one recipe: bbbp_rnn, bace_dmpnn, esol_rnn, ...")
    parser.add_argument("--data", type=Path, help="the dataset file (dataset.path) of one recipe")
    parser.add_argument("--split", choices=["random", "scaffold"], help="dataset.split [default: the recipe's]")
    parser.add_argument("--table", action="store_true", help="every set of --sets with every family of --families")
    parser.add_argument("--data-dir", type=Path, help="with --table: the folder holding the MoleculeNet files")
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--families", nargs="+", default=["rnn", "dmpnn"], help="recipe suffixes: rnn, dmpnn, ffn")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--launcher", default="torchrun")
    parser.add_argument(
        "--tracking",
        default="mlflow",
        help="mlflow (a store in a temporary folder), or none where MLflow is not installed (a GPU "
        "machine); the results come from the run folders either way",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--record", type=Path, help="with --table: append each seed's result to this JSON-lines file")
    parser.add_argument(
        "--best-of",
        type=Path,
        metavar="RECORD",
        help="print, per set, the better model by dev metric from a --record file, and stop",
    )
    parser.add_argument("overrides", nargs="*", help="extra KEY=VALUE recipe overrides")
    args = parser.parse_intermixed_args()
    if args.recipe and "=" in args.recipe:  # with --table the first KEY=VALUE lands here: it is an override
        args.overrides.insert(0, args.recipe)
        args.recipe = None
    if args.best_of:
        best_of(args.best_of)
    elif args.table:
        if args.data_dir is None:
            parser.error("--table needs --data-dir")
        table(args)
    elif args.recipe and args.data:
        one_recipe(args)
    else:
        parser.error("give RECIPE --data FILE, or --table --data-dir FOLDER")


if __name__ == "__main__":
    main()
