"""ddpx's ``dmpnn`` beside Chemprop itself: the same split, the same settings, held-out ROC-AUC
and time, over seeds, as a Markdown table (benchmarks/measurements.md, docs/performance.md).

    python benchmarks/vs_chemprop/run.py --set bbbp --data ../shared/data/bbbp/BBBP.csv
    python benchmarks/vs_chemprop/run.py --set bace --data ../shared/data/moleculenet/bace.csv --seeds 0
    python benchmarks/vs_chemprop/run.py --set lipophilicity_small --data ../shared/data/moleculenet/Lipophilicity.csv

For each seed it runs

- Chemprop's own command line, ``chemprop train`` (the ``chemprop`` beside this Python), on the
  exact split ddpx uses: ddpx builds the task's data as its ranks do (MoleculeNet's scaffold split
  80/10/10 of the recipe; the molecules RDKit cannot parse left out), and the molecules it keeps
  are written as a CSV and their train/dev/held-out rows as a Chemprop splits file (``--splits-file``:
  a JSON list of ``{"train": [...], "val": [...], "test": [...]}``). Chemprop's defaults otherwise
  (50 epochs, batch 64, hidden 300, depth 3, its learning-rate schedule), once keeping the epoch
  of lowest validation loss (its default) and once the epoch of highest validation ROC-AUC
  (``--tracking-metric roc``, as ddpx selects);
- ``ddpx recipe <set>_dmpnn --tracking none`` on 1 rank (batch 64) and on 2 ranks (batch 32 per
  rank: the same 64 molecules per optimizer step as Chemprop's), through the spawn launcher,
  keeping the epoch of highest dev ROC-AUC (ddpx's default) or, as ``ddpx1_loss`` and
  ``ddpx2_loss``, of lowest dev loss (``train.select_by=loss``, Chemprop's default).

Held-out ROC-AUC is computed the same way for both (scikit-learn, over the same held-out molecules:
the script checks that Chemprop's test molecules are ddpx's held-out molecules, in order). Seconds
per epoch, training only and whole (with the dev evaluation and the checkpoint): for Chemprop from
a Lightning callback added to Chemprop's command line (``chemprop.cli.main.main``, what the
``chemprop`` command runs, started as ``python clocked_chemprop.py FILE STEPS train ...``, beside
this script), which notes when each epoch starts, when its validation starts and when it ends; for ddpx
from its metrics (``samples_per_s`` and ``epoch_s``). Total: the command's wall time, start to exit,
both including Python's imports and featurization.

A second table says where each training epoch goes, the same four phases for both loops: waiting
for the batch, forward with the loss, backward, optimizer step; what is left of the training epoch
is each loop's own bookkeeping. Chemprop's from the callback (a batch from the end of the previous
one to ``on_train_batch_start``; forward to ``on_before_backward``, backward to
``on_after_backward``, the step from ``on_before_optimizer_step`` to ``on_train_batch_end``), ddpx's
from ``train.time_phases=true`` (rank 0's, on 2 ranks; backward includes DDP's all-reduce).

``--alternate`` runs the ``--runs`` in reverse order on every other seed (as given on the first,
third, ... of ``--seeds``, reversed on the second, fourth, ...), so that a machine that drifts
favours neither side; with two runs a third table puts each seed's pair side by side with its ratio.

``--lockstep`` (two runs of one process each) starts the pair together and lets them take turns
epoch by epoch (``lockstep.py``: each trains one epoch, with its dev evaluation, while the other
waits blocked on a pipe), so that every epoch of one lies between two of the other's and the
machine's drift falls on both alike; the pairs table then adds the median ratio over all pairs
of epochs. Each run's wall time then includes its waits.

``--profile-steps N --profile-dir DIR`` traces the same optimizer steps of both loops with
``torch.profiler`` — ddpx through ``train.profile_steps``, Chemprop through the same profiler class
driven from the callback (steps counted alike, the trace ending before the first validation) —
and keeps each run's operator table in DIR (``chemprop_roc-seed0-ops.txt``, ``ddpx1-seed0-ops.txt``):
which operators make one loop's step longer than the other's.

**Regression** (``--set esol``, ``lipophilicity`` and ``lipophilicity_small``): the same runs
with ``--task-type regression``; both standardise the target on the training molecules and answer
in the file's units. Held-out RMSE and MAE are computed by the same function for both
(``chemprop_inputs.rmse_mae``), from Chemprop's ``test_predictions.csv`` and from ddpx's
``heldout_predictions.csv`` (whose targets are checked to be the same held-out molecules, in
order, and whose RMSE is checked against the one ddpx logged). For one target, the epoch of lowest
dev loss (mean squared error on the standardised target) is the epoch of lowest dev RMSE, so the
default runs are ``chemprop_loss ddpx1 ddpx2`` (``chemprop_rmse`` selects by val RMSE).
``lipophilicity_small`` is 600 molecules drawn with seed 0 from Lipophilicity.csv (``--data``) by
``small_set.py``, written to the run's folder (``--small-out`` keeps a copy); the table names the
drawn file's md5.

``--record FILE`` writes every run's numbers as the run ends (``parity_record.py``), and ``--report
FILE ...`` prints the tables again from records alone, several records of one set and settings
(a seed each) as one table: a table in the docs regenerates from the committed record, and the
same command with the same ``--record`` goes on where it stopped, each (run, seed) it holds kept.

Beside this script: ``chemprop_inputs.py`` writes Chemprop's inputs from ddpx's split,
``small_set.py`` draws the small set, ``clocked_chemprop.py`` is Chemprop with the clock, ``launches.py`` starts and reads the runs, ``parity_record.py`` keeps them
(alone, or in lockstep through ``lockstep.py``), ``report.py`` prints the tables.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.vs_chemprop.chemprop_inputs import write_chemprop_inputs
from benchmarks.vs_chemprop.launches import Launch, run_alone, run_chemprop, run_ddpx, run_in_lockstep
from benchmarks.vs_chemprop.parity_record import (
    add_record_options,
    add_result,
    going_on,
    has_result,
    merged,
    new_record,
)
from benchmarks.vs_chemprop.report import LABELS, format_tables, run_order
from benchmarks.vs_chemprop.small_set import SMALL_SEED, SMALL_SIZE, draw_small_set, md5


class BenchSet(NamedTuple):
    recipe: str
    overrides: tuple[str, ...] = ()  # extra ddpx overrides for the shared copies of the files
    regression: bool = False
    drawn: bool = False  # the small set: SMALL_SIZE molecules drawn from --data (small_set.py)


SETS = {
    "bbbp": BenchSet("bbbp_dmpnn"),
    "bace": BenchSet("bace_dmpnn", ("dataset.smiles_column=smiles",)),  # the shared copy names the column `smiles`
    "clintox": BenchSet("clintox_dmpnn"),
    "tox21": BenchSet("tox21_dmpnn"),
    "sider": BenchSet("sider_dmpnn"),
    "hiv": BenchSet("hiv_dmpnn"),
    "esol": BenchSet("esol_dmpnn", regression=True),
    "lipophilicity": BenchSet("lipophilicity_dmpnn", regression=True),
    "lipophilicity_small": BenchSet("lipophilicity_dmpnn", regression=True, drawn=True),
}
DEFAULT_RUNS = {False: ["chemprop_loss", "chemprop_roc", "ddpx1", "ddpx2"], True: ["chemprop_loss", "ddpx1", "ddpx2"]}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--set", choices=list(SETS), default="bbbp", help="the MoleculeNet set (its <set>_dmpnn recipe)"
    )
    parser.add_argument(
        "--data",
        type=Path,
        help="its CSV file (dataset.path); for lipophilicity_small, Lipophilicity.csv, the file it is drawn from",
    )
    parser.add_argument(
        "--small-out",
        type=Path,
        help="lipophilicity_small: keep a copy of the drawn file here (it is drawn anew each run)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument(
        "--runs",
        nargs="+",
        choices=list(LABELS),
        help="ddpxN: N ranks, the epoch of the best dev metric (ddpx's default); ddpxN_loss: of the "
        "lowest dev loss (train.select_by=loss, Chemprop's default); chemprop_roc (classification) and "
        "chemprop_rmse (regression): Chemprop selecting by the metric. Default: "
        f"{' '.join(DEFAULT_RUNS[False])} (classification), {' '.join(DEFAULT_RUNS[True])} (regression)",
    )
    parser.add_argument(
        "--alternate",
        action="store_true",
        help="run the --runs in reverse order on every other seed, so that the machine's drift "
        "within a seed's runs falls on each side alike",
    )
    parser.add_argument(
        "--lockstep",
        action="store_true",
        help="two one-process runs started together, taking turns epoch by epoch (each trains "
        "while the other waits): drift between minutes falls on both alike",
    )
    parser.add_argument(
        "--profile-steps",
        type=int,
        default=0,
        help="trace this many optimizer steps of every run with torch.profiler (0: none)",
    )
    parser.add_argument("--profile-dir", type=Path, help="where each run's operator table goes (with --profile-steps)")
    add_record_options(parser)
    return checked(parser, parser.parse_args(argv))


def checked(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """The arguments, with the runs of the set's kind by default; a usage error where they do not go together."""
    if args.report:  # the record says the set and settings
        return args
    if args.data is None:
        parser.error("--data is required (but with --report)")
    regression = SETS[args.set].regression
    args.runs = args.runs or DEFAULT_RUNS[regression]
    if ("chemprop_rmse" if not regression else "chemprop_roc") in args.runs:
        parser.error("chemprop_roc is for a classification set, chemprop_rmse for a regression set")
    if bool(args.profile_steps) != bool(args.profile_dir):
        parser.error("--profile-steps and --profile-dir go together")
    if args.epochs <= 2 and any(run.startswith("chemprop") for run in args.runs):
        parser.error("chemprop train needs more epochs than its 2 warm-up epochs: --epochs 3 or more")
    if args.lockstep and (len(args.runs) != 2 or any(run.startswith("ddpx2") for run in args.runs)):
        parser.error("--lockstep takes two --runs of one process each (chemprop_*, ddpx1, ddpx1_loss)")
    return args


def launch(
    run: str, seed: int, args: argparse.Namespace, data: Path, folder: Path, inputs: tuple, train_size: int
) -> Launch:
    """One run of a seed, ready to start (``data``: the CSV file ddpx reads; ``inputs``: what
    :func:`write_chemprop_inputs` returned)."""
    bench = SETS[args.set]
    names, heldout_smiles, heldout_targets = inputs
    if run.startswith("chemprop"):
        return run_chemprop(
            folder,
            names,
            (heldout_smiles, heldout_targets),
            seed,
            "val_loss" if run == "chemprop_loss" else run.removeprefix("chemprop_"),
            args.epochs,
            args.profile_steps,
            args.profile_dir,
            bench.regression,
        )
    return run_ddpx(
        run,
        bench.recipe,
        data,
        bench.overrides,
        seed,
        args.epochs,
        folder,
        train_size,
        args.profile_steps,
        args.profile_dir,
        (names, heldout_targets) if bench.regression else None,
    )


def input_file(args: argparse.Namespace, folder: Path) -> tuple[Path, str]:
    """The CSV file both read, and how the table names it: ``--data``, or for the small set the
    molecules drawn from it (written in ``folder``, and copied to ``--small-out``)."""
    if not SETS[args.set].drawn:
        return args.data, args.data.name
    data = draw_small_set(args.data, folder / "lipophilicity_small.csv")
    if args.small_out:
        draw_small_set(args.data, args.small_out)
    return data, f"{SMALL_SIZE} molecules drawn from {args.data.name} with seed {SMALL_SEED}, md5 {md5(data)}"


def measure(args: argparse.Namespace) -> dict:
    """Every seed's runs, one after the other or in lockstep, into a record (``parity_record.py``;
    written after each run with ``--record``, and gone on with where it holds runs already)."""
    bench = SETS[args.set]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, named = input_file(args, folder)
        inputs = write_chemprop_inputs(bench.recipe, data, bench.overrides, folder)
        train_size = len(json.loads((folder / "splits.json").read_text())[0]["train"])
        record = going_on(new_record(args, named, len(inputs[1])), args.record)
        for turn, seed in enumerate(args.seeds):
            planned = run_order(args.runs, turn, args.alternate)
            order = [run for run in planned if not has_result(record, run, seed)]
            if len(order) < len(args.runs):
                print(f"seed {seed}: {len(args.runs) - len(order)} run(s) kept from {args.record}", file=sys.stderr)
            launches = {}
            for run in order:
                launches[run] = launch(run, seed, args, data, folder, inputs, train_size)
                if not args.lockstep:  # one after the other: each builds its command as its turn comes
                    ended(
                        record,
                        run,
                        seed,
                        {**run_alone(run, launches.pop(run)), "position": planned.index(run)},
                        args.record,
                    )
            if launches:  # --lockstep
                for run, result in run_in_lockstep(launches, folder).items():
                    ended(record, run, seed, {**result, "position": planned.index(run)}, args.record)
    return record


def ended(record: dict, run: str, seed: int, result: dict, path: Path | None) -> None:
    add_result(record, run, seed, result, path)
    print(f"seed {seed} {run}: {json.dumps(result)}", file=sys.stderr, flush=True)


def report_of(record: dict) -> str:
    """The tables of a record (``parity_record.py``), its runs labelled with its set's recipe and metric."""
    bench = SETS[record["set"]]
    metric, best = ("RMSE", "lowest") if bench.regression else ("ROC-AUC", "highest")
    labels = {run: label.format(recipe=bench.recipe, metric=metric, best=best) for run, label in LABELS.items()}
    return format_tables(record, labels)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.report:
        print(report_of(merged([json.loads(path.read_text(encoding="utf-8")) for path in args.report])))
    else:
        print(report_of(measure(args)))


if __name__ == "__main__":
    main()
