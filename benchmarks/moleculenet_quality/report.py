"""The tables ``run.py`` prints: one recipe over seeds, the whole MoleculeNet table, and the best
model per set by dev from a ``--record`` file."""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
from datetime import date
from pathlib import Path

from benchmarks.common.provenance import commit
from benchmarks.moleculenet_quality.predictions import (
    answers_metric,
    averaged,
    ensemble_value,
    heldout_predictions,
    seeds_averaged,
)
from benchmarks.moleculenet_quality.seeds import (
    PUBLISHED,
    SCAFFOLD,
    SETS,
    arithmetic,
    arithmetic_text,
    find_file,
    record,
    run_seed,
    threads_text,
)


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
    value = None if together is None else answers_metric(together, models[by_dev[0]][0]["metric"])
    return "—" if value is None else f"{value:.4f} ({' + '.join(best.values())})"
