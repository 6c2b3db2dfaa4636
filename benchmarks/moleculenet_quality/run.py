"""Held-out quality of the SMILES recipes on real MoleculeNet files, over seeds, for benchmarks/measurements.md.

One recipe:

    python benchmarks/moleculenet_quality/run.py bbbp_rnn --data ~/.cache/ddpx/data/bbbp/BBBP.csv
    python benchmarks/moleculenet_quality/run.py bbbp_rnn --data .../BBBP.csv --split scaffold dataset.dev_fraction=0.1111111111111111
    python benchmarks/moleculenet_quality/run.py sider_rnn --data .../sider.csv --seeds 0 1 2

The whole MoleculeNet table (every set on its scaffold split 80/10/10, each model family, beside
the published rows that ``../shared/data/README.md`` quotes for that split):

    python benchmarks/moleculenet_quality/run.py --table --data-dir ../shared/data --families rnn dmpnn
    python benchmarks/moleculenet_quality/run.py --table --data-dir ../shared/data --sets esol lipophilicity --seeds 0
    python benchmarks/moleculenet_quality/run.py --table dataset.canonicalize=true --data-dir ../shared/data --sets clintox --families rnn

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

    python benchmarks/moleculenet_quality/run.py --table --data-dir ../shared/data --record results.jsonl
    python benchmarks/moleculenet_quality/run.py --best-of results.jsonl

Beside this script: ``seeds.py`` runs and records the seeds, ``predictions.py`` reads their held-out
predictions and ensembles them, ``report.py`` prints the tables.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.moleculenet_quality.report import best_of, one_recipe, table
from benchmarks.moleculenet_quality.seeds import SETS


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
