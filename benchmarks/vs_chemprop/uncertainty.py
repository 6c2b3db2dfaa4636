"""ddpx's uncertainty and calibration beside Chemprop 2.3.1's: the same scaffold split, the same
seeds, and the same evaluators applied to both programs' held-out answers, as one Markdown table
per set (docs/results.md, "Uncertainty and calibration beside Chemprop").

    python benchmarks/vs_chemprop/uncertainty.py --set esol --data ../shared/data/moleculenet/ESOL_delaney-processed.csv
    python benchmarks/vs_chemprop/uncertainty.py --set bbbp --data ../shared/data/bbbp/BBBP.csv --record bbbp-unc.json --keep bbbp-work
    python benchmarks/vs_chemprop/uncertainty.py --set tox21 --data ../shared/data/moleculenet/tox21.csv --methods conformal
    python benchmarks/vs_chemprop/uncertainty.py --set lipophilicity_small --data ../shared/data/moleculenet/Lipophilicity.csv --seeds 0
    python benchmarks/vs_chemprop/uncertainty.py --report bbbp-unc.json     # the table again, no runs

The split is ddpx's (``chemprop_inputs.py``: MoleculeNet's scaffold split 80/10/10 as a rank builds
it, written as Chemprop's CSV and splits file, as ``run.py`` does). For each seed and method both
programs train on it, batch 64, ``--epochs`` epochs, each keeping the epoch of lowest dev loss
(Chemprop's default; ddpx ``train.select_by=loss``), one model per (program, seed, model kind),
shared by the methods that can share it:

- regression (``--methods`` default ``mve ensemble ensemble_zscaling conformal``):
    - ``mve``: Chemprop ``chemprop train -t regression-mve``, its ``mve`` estimator, z-scaling fitted
      on dev; ddpx ``model.uncertainty=mve train.calibration=zscaling``;
    - ``ensemble``: Chemprop ``--ensemble-size K`` with the ``ensemble`` estimator (the members'
      variance); ddpx ``train.ensemble_size=K`` (the members' spread, squared); neither calibrated;
    - ``ensemble_zscaling``: the same ensembles, their variance z-scaled on dev: Chemprop's
      ``zscaling`` on the ``ensemble`` estimator's variance (``chemprop predict --uncertainty-method
      ensemble --calibration-method zscaling``); ddpx ``train.ensemble_size=K
      train.calibration=zscaling`` (its ``calibrated_variance``). One ensemble per program serves
      both ensemble rows: ddpx's run is the z-scaled one, and the ``ensemble`` row reads its raw
      spread (a calibrator is fitted after training and changes nothing else; the run logs the
      raw spread's scores as ``..._uncalibrated``);
    - ``conformal``: the 90 % split-conformal interval fitted on dev, from the mve model of each:
      Chemprop's ``conformal-regression`` (alpha 0.1; its score is the error less the predicted
      variance, so the interval is ŷ ± (σ² + q)); ddpx's recorded interval (ŷ ± q σ);
- classification (default ``ensemble ensemble_platt platt isotonic conformal``):
    - ``platt``, ``isotonic``: Chemprop's one ``-t classification`` model with its ``platt`` or
      ``isotonic`` calibrator fitted on dev; ddpx ``train.calibration=platt`` and ``isotonic``, one
      run each (a ddpx calibrator is fitted when its run ends);
    - ``conformal``: Chemprop's ``conformal-multilabel`` (alpha 0.1) on that model, each label's
      set read off its in- and out-sets; ddpx's platt run's recorded 90 % set;
    - ``ensemble``: the members' mean probability, ``K`` members on both sides;
    - ``ensemble_platt``: those ensembles' mean probability through ``platt`` fitted on dev (Chemprop's
      as its ``predict --calibration-method platt`` with the ``K`` models; ddpx ``train.ensemble_size=K
      train.calibration=platt``); as for regression, ddpx's one run serves both ensemble rows.

Chemprop's calibrators are its own classes, fitted and applied as ``chemprop predict
--calibration-method M --cal-path dev.csv`` does, on one ``chemprop predict`` of the dev and
held-out molecules (``uncertainty_chemprop.py`` says why: its command line drops a classification
model's calibrated answers). ddpx's answers are its run's ``heldout_predictions.csv``
(``uncertainty_ddpx.py``, which checks its targets are Chemprop's held-out targets in order and
that the evaluators give the values the run logged). One evaluator per kind of answer scores both
(``uncertainty_scores.py``: ddpx's numpy evaluators); the arrays each row scored are written beside
(``scored/``, with ``--keep DIR``). ``uncertainty_report.py`` prints the table: per method and
program each metric's mean ± sd over the seeds with every seed's value, and the goals: held-out
coverage of the 90 % interval or set within 2 points of 90 % (and how far it falls), a lower ECE than
Chemprop's best calibrated model (classification), a higher Spearman of uncertainty with absolute
error than Chemprop's (regression).

A long benchmark goes on where it stopped: the same command with the same ``--record`` keeps every
row the record holds, and with the same ``--keep`` folder a model whose training ended is used again
(Chemprop's by its ``trained.done``, ddpx's by its ``summary.json``); a ddpx run cut off continues
from its last checkpoint, a Chemprop ensemble from its next member (``train_members``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from collections.abc import Callable
from datetime import date
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.common.provenance import commit
from benchmarks.vs_chemprop.run import SETS, input_file
from benchmarks.vs_chemprop.uncertainty_report import PROGRAMS, differing, format_report, merged

METHODS = {
    True: ["mve", "ensemble", "ensemble_zscaling", "conformal"],
    False: ["ensemble", "ensemble_platt", "platt", "isotonic", "conformal"],
}
MODEL_OF = {  # (regression, method): the model kind each program answers it with
    (True, "mve"): {"chemprop": "mve", "ddpx": "mve"},
    (True, "ensemble"): {"chemprop": "ensemble", "ddpx": "ensemble_zscaling"},  # ddpx: the run's raw spread
    (True, "ensemble_zscaling"): {"chemprop": "ensemble", "ddpx": "ensemble_zscaling"},
    (True, "conformal"): {"chemprop": "mve", "ddpx": "mve"},
    (False, "ensemble"): {"chemprop": "ensemble", "ddpx": "ensemble_platt"},  # ddpx: the run's raw probability
    (False, "ensemble_platt"): {"chemprop": "ensemble", "ddpx": "ensemble_platt"},
    (False, "platt"): {"chemprop": "plain", "ddpx": "platt"},
    (False, "isotonic"): {"chemprop": "plain", "ddpx": "isotonic"},
    (False, "conformal"): {"chemprop": "plain", "ddpx": "platt"},
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--set", choices=list(SETS), default="esol", help="the MoleculeNet set (its <set>_dmpnn recipe)"
    )
    parser.add_argument("--data", type=Path, help="its CSV file; for lipophilicity_small, Lipophilicity.csv")
    parser.add_argument("--small-out", type=Path, help="lipophilicity_small: keep a copy of the drawn file here")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--ensemble-size", type=int, default=5)
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=sorted({method for _, method in MODEL_OF}),
        help=f"default: {' '.join(METHODS[True])} (regression), {' '.join(METHODS[False])} (classification)",
    )
    parser.add_argument(
        "--record",
        type=Path,
        help="write every row's numbers here (JSON), as they come; a record of the same settings and code goes on "
        "where it stopped (every row it holds is kept; with --keep, the models an earlier start trained are "
        "used again and a ddpx run cut off goes on from its checkpoint)",
    )
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        help="print the table of this record again, and run nothing; several records of one set and settings "
        "(one a seed, say) print as one table of all their seeds",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="work in this folder and keep it (models, predictions, scored/); with --record, the same folder "
        "again lets a stopped benchmark go on without training again what it finished",
    )
    args = parser.parse_args(argv)
    if args.report:
        return args
    regression = SETS[args.set].regression
    args.methods = args.methods or METHODS[regression]
    unknown = [m for m in args.methods if (regression, m) not in MODEL_OF]
    if unknown:
        parser.error(f"{' '.join(unknown)}: not a method for a {'regression' if regression else 'classification'} set")
    if args.data is None:
        parser.error("--data is needed (or --report)")
    if args.epochs <= 2:
        parser.error("chemprop train needs more epochs than its 2 warm-up epochs: --epochs 3 or more")
    if args.ensemble_size < 2:
        parser.error("--ensemble-size is 2 or more: the ensemble's uncertainty is its members' spread")
    return args


def start_record(args: argparse.Namespace, named: str, rows, heldout: int) -> dict:
    return {
        "set": args.set,
        "regression": SETS[args.set].regression,
        "data": named,
        "dev": len(rows.dev_smiles),
        "heldout": heldout,
        "epochs": args.epochs,
        "seeds": args.seeds,
        "ensemble_size": args.ensemble_size,
        "methods": args.methods,
        "measured": f"{date.today()}: {platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}, commit {commit()}",
        "scores": {method: {program: [] for program in PROGRAMS} for method in args.methods},
    }


def resumed(record: dict, args: argparse.Namespace) -> dict:
    """The record ``--record`` holds, to go on with: the same set, data, settings and code, every row it
    has kept (those of a seed it was in too); anything else is refused (a record is of one version of the
    code)."""
    if not args.record or not args.record.exists():
        return record
    held = json.loads(args.record.read_text(encoding="utf-8"))
    differ = differing(held, record) + (["seeds"] if held.get("seeds") != record["seeds"] else [])
    if held.get("measured", "").split("commit ")[-1] != record["measured"].split("commit ")[-1]:
        differ.append("commit")
    if differ:
        raise SystemExit(
            f"{args.record} is a record of other {', '.join(differ)}: name another --record file "
            "(a record goes on only with the settings and code it began with)"
        )
    return held


def has_row(record: dict, method: str, program: str, seed: int) -> bool:
    return any(run["seed"] == seed for run in record["scores"][method][program])


def finished_seeds(record: dict) -> list[int]:
    """The seeds that have a row for every method and program."""
    rows = [{run["seed"] for run in runs} for method in record["scores"].values() for runs in method.values()]
    return [seed for seed in record["seeds"] if all(seed in seeds for seeds in rows)]


def write_scored(path: Path, smiles: list[str], names: list[str], targets, heldout) -> None:
    """The held-out arrays a row scored, with the molecules and their targets, as a CSV."""
    import pandas as pd

    def named(name: str) -> list[str]:
        return [name] if len(names) == 1 else [f"{name}_{n}" for n in names]

    table = pd.DataFrame({"smiles": smiles})
    for name, values in {"target": targets, **heldout.arrays}.items():
        for column, j in zip(named(name), range(values.shape[1])):
            table[column] = values[:, j]
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)


def scored(method: str, program: str, seed: int, context: SimpleNamespace, models: dict) -> dict:
    """One row's scores for one seed, training the model it needs unless this seed has it."""
    from benchmarks.vs_chemprop.uncertainty_chemprop import chemprop_heldout, chemprop_model, fails_whatever_the_model
    from benchmarks.vs_chemprop.uncertainty_ddpx import check_logged, ddpx_heldout, ddpx_run
    from benchmarks.vs_chemprop.uncertainty_scores import score

    args, regression = context.args, SETS[context.args.set].regression
    kind = MODEL_OF[(regression, method)][program]
    bench, k = SETS[args.set], args.ensemble_size
    reason = fails_whatever_the_model(method, regression, context.rows.dev_targets) if program == "chemprop" else None
    if reason:
        return {"seed": seed, "unavailable": reason}
    if (program, kind) not in models:
        if program == "chemprop":
            models[program, kind] = chemprop_model(kind, regression, seed, args.epochs, k, context.names, context.rows)
        else:
            folder = context.rows.path.parent
            models[program, kind] = ddpx_run(
                bench.recipe, context.data, bench.overrides, kind, seed, args.epochs, k, folder
            )
    if program == "chemprop":
        heldout = chemprop_heldout(method, regression, models[program, kind], context.rows.dev_targets)
    else:
        heldout = ddpx_heldout(method, regression, models[program, kind], context.names, context.targets)
    if heldout.kind == "unavailable":
        return {"seed": seed, "unavailable": heldout.reason}
    scores = score(heldout.kind, context.targets, heldout.arrays)
    if program == "ddpx":
        check_logged(models[program, kind], method, scores)
    where = context.rows.path.parent / "scored" / f"{args.set}-seed{seed}-{method}-{program}.csv"
    write_scored(where, context.rows.heldout_smiles, context.names, context.targets, heldout)
    resumed = getattr(models[program, kind], "resumed_from", None)  # a Chemprop ensemble cut off, gone on
    return {"seed": seed, **scores, **({"members_resumed_from": resumed} if resumed is not None else {})}


def measure(args: argparse.Namespace, folder: Path) -> dict:
    """Every seed's rows, the record written after each one (``--record``)."""
    import numpy as np

    from benchmarks.vs_chemprop.chemprop_inputs import write_chemprop_inputs
    from benchmarks.vs_chemprop.uncertainty_chemprop import write_prediction_rows

    bench = SETS[args.set]
    data, named = input_file(args, folder)
    names, heldout_smiles, heldout_targets = write_chemprop_inputs(bench.recipe, data, bench.overrides, folder)
    rows = write_prediction_rows(folder)
    if rows.heldout_smiles != heldout_smiles:
        raise SystemExit("the held-out rows of Chemprop's splits file are not ddpx's held-out molecules, in order")
    targets = np.array(heldout_targets, dtype=np.float64).reshape(len(heldout_targets), -1)
    context = SimpleNamespace(args=args, data=data, names=names, rows=rows, targets=targets)
    record = resumed(start_record(args, named, rows, len(heldout_smiles)), args)
    return fill_rows(record, args, lambda method, program, seed, models: scored(method, program, seed, context, models))


def fill_rows(record: dict, args: argparse.Namespace, row: Callable[[str, str, int, dict], dict]) -> dict:
    """Every (seed, method, program) row the record lacks, from ``row``, in order; the record written
    after each one (``--record``). ``row``'s last argument holds the models of the seed it is in."""
    done = finished_seeds(record)
    if done:
        print(f"{args.record}: seed(s) {' '.join(map(str, done))} finished earlier, kept", file=sys.stderr)
    for seed in [seed for seed in args.seeds if seed not in done]:
        models: dict = {}
        for method in args.methods:
            for program in PROGRAMS:
                if has_row(record, method, program, seed):
                    print(f"seed {seed} {method} {program}: kept from {args.record}", file=sys.stderr, flush=True)
                    continue
                result = row(method, program, seed, models)
                record["scores"][method][program].append(result)
                print(f"seed {seed} {method} {program}: {json.dumps(result)}", file=sys.stderr, flush=True)
                if args.record:
                    args.record.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return record


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.report:
        record = merged([json.loads(path.read_text(encoding="utf-8")) for path in args.report])
    elif args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        record = measure(args, args.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            record = measure(args, Path(tmp))
    print(format_report(record))


if __name__ == "__main__":
    main()
