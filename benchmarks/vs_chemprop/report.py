"""The tables ``run.py`` prints: held-out ROC-AUC and time per run, where a training epoch goes,
and, for two runs, the pairs seed by seed."""

from __future__ import annotations

import statistics

from benchmarks.vs_chemprop.clocked_chemprop import PHASES
from benchmarks.vs_chemprop.parity_record import measured_line

LABELS = {  # the runs --runs can name, as the tables label them ({metric}: ROC-AUC or RMSE; {best}: highest or lowest)
    "chemprop_loss": "Chemprop `chemprop train` (best epoch: lowest val loss, its default)",
    "chemprop_roc": "Chemprop `chemprop train --tracking-metric roc` (best epoch: highest val ROC-AUC)",
    "chemprop_rmse": "Chemprop `chemprop train --tracking-metric rmse` (best epoch: lowest val RMSE)",
    "ddpx1": "ddpx `{recipe}`, 1 rank, batch 64 (best epoch: {best} dev {metric}, its default)",
    "ddpx2": "ddpx `{recipe}`, 2 ranks × batch 32 (best epoch: {best} dev {metric})",
    "ddpx1_loss": "ddpx `{recipe}`, 1 rank, batch 64, `train.select_by=loss` (best epoch: lowest dev loss)",
    "ddpx2_loss": "ddpx `{recipe}`, 2 ranks × batch 32, `train.select_by=loss` (best epoch: lowest dev loss)",
}


def summary_row(label: str, results: list[dict]) -> str:
    """A run's held-out metric (mean ± sd, per seed), its MAE on a regression set, and its times."""
    values = [r["value"] for r in results]
    spread = f" ± {statistics.stdev(values):.4f}" if len(values) > 1 else ""
    per_seed = ", ".join(f"{v:.4f}" for v in values)
    if "mae" in results[0]:
        per_seed += f" | {statistics.mean(r['mae'] for r in results):.4f}"
    whole = [r["whole_epoch_s"] for r in results if r["whole_epoch_s"] == r["whole_epoch_s"]]
    whole_text = f"{statistics.mean(whole):.2f}" if whole else "—"
    return (
        f"| {label} | {statistics.mean(values):.4f}{spread} | {per_seed} | "
        f"{statistics.mean(r['epoch_s'] for r in results):.2f} | {whole_text} | "
        f"{statistics.mean(r['wall_s'] for r in results):.0f} | {sum(r['wall_s'] for r in results):.0f} |"
    )


def phases_row(label: str, results: list[dict]) -> str:
    """Where a training epoch goes: each phase's mean over epochs and seeds, then the rest."""
    means = [statistics.mean(r[phase] for r in results) for phase in PHASES]
    training = statistics.mean(r["epoch_s"] for r in results)
    cells = " | ".join(f"{m:.3f}" for m in means)
    return f"| {label} | {cells} | {training - sum(means):.3f} | {training:.3f} |"


def run_order(runs: list[str], turn: int, alternate: bool) -> list[str]:
    """The order of a seed's runs: as given, or with ``--alternate`` reversed on every other seed."""
    return runs[::-1] if alternate and turn % 2 else runs


def pairs_table(runs: list[str], seeds: list[int], results: dict[str, list[dict]], lockstep: bool = False) -> list[str]:
    """Seed by seed, the second run's training epoch against the first's (two runs only), and which ran
    first (each result's ``position`` in its seed's order): with ``--alternate`` half the pairs ran in
    each order, so drift within a pair cannot favour one side."""
    first, second = runs
    lines = [
        f"| seed | ran first | {first}, s/epoch training | {second} | {second} / {first} |",
        "| --- | --- | --- | --- | --- |",
    ]
    ratios = []
    for turn, seed in enumerate(seeds):
        a, b = results[first][turn]["epoch_s"], results[second][turn]["epoch_s"]
        ratios.append(b / a)
        ran_first = min(runs, key=lambda run: results[run][turn]["position"])
        lines.append(f"| {seed} | {ran_first} | {a:.2f} | {b:.2f} | {b / a:.3f} |")
    lines.append(
        f"\nmedian {second} / {first}: {statistics.median(ratios):.3f} over {len(ratios)} pairs "
        f"({min(ratios):.3f}–{max(ratios):.3f})"
    )
    if lockstep:  # epoch i of one run lies between epochs i and i + 1 of the other: each a pair too
        by_epoch = [
            b / a
            for turn in range(len(seeds))
            for a, b in zip(results[first][turn]["epochs"], results[second][turn]["epochs"])
        ]
        slower = sum(ratio > 1 for ratio in by_epoch)
        lines.append(
            f"epoch by epoch (lockstep): median {second} / {first} {statistics.median(by_epoch):.3f} over "
            f"{len(by_epoch)} pairs of epochs, {second} the longer in {slower}"
        )
    return lines


def format_tables(record: dict, labels: dict[str, str]) -> str:
    """The header naming the machine, commit and settings, then the tables, from a record
    (``parity_record.py``) of the seeds every run of it has ended; on a regression set, a line per ddpx
    run against Chemprop's mean."""
    record = complete_seeds(record)
    runs, results = record["runs"], record["results"]
    regression = "mae" in next(iter(results.values()))[0]
    metric = "RMSE" if regression else "ROC-AUC"
    mae = " held-out MAE (mean) |" if regression else ""
    lines = [
        measured_line(record) + "\n",
        f"| run | held-out {metric} (mean ± sd) | per seed |{mae} s/epoch, training | s/epoch, with dev | "
        "s/run | s, all seeds |",
        "| --- | --- | --- |" + " --- |" * (4 + regression),
        *(summary_row(labels[run], results[run]) for run in runs),
    ]
    if regression:
        lines += ["", *against_chemprop(runs, results, labels)]
    lines += [
        "\nWhere a training epoch goes (s, means over epochs and seeds):\n",
        "| run | waiting for batches | forward and loss | backward | optimizer step | the rest | training epoch |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *(phases_row(labels[run], results[run]) for run in runs),
    ]
    if len(runs) == 2:
        lines += ["\nPairs, seed by seed:\n", *pairs_table(runs, record["seeds"], results, record["lockstep"])]
    return "\n".join(lines)


def against_chemprop(runs: list[str], results: dict[str, list[dict]], labels: dict[str, str]) -> list[str]:
    """Each ddpx run's mean held-out RMSE against the first Chemprop run's, in percent (the issue's
    bar: within 5 %; below zero, ddpx's error is the lower)."""
    reference = next((run for run in runs if run.startswith("chemprop")), None)
    if reference is None:
        return []
    chemprop = statistics.mean(r["value"] for r in results[reference])
    lines = []
    for run in (run for run in runs if run.startswith("ddpx")):
        mean = statistics.mean(r["value"] for r in results[run])
        change = 100 * (mean - chemprop) / chemprop
        verdict = "within 5 %" if change <= 5 else "not within 5 %"
        lines.append(
            f"- {labels[run].split(' (best epoch')[0]}: {mean:.4f} against Chemprop's {chemprop:.4f}, "
            f"{change:+.1f} % ({verdict}; {len(results[run])} seed{'s' if len(results[run]) > 1 else ''})"
        )
    return lines


def complete_seeds(record: dict) -> dict:
    """The record with only the seeds every run has ended, each run's results in the record's order of seeds."""
    results = record["results"]
    seeds = [s for s in record["seeds"] if all(any(r["seed"] == s for r in results[run]) for run in record["runs"])]
    if not seeds:
        raise SystemExit("the record holds no seed whose every run has ended")
    ordered = {
        run: sorted((r for r in results[run] if r["seed"] in seeds), key=lambda r: seeds.index(r["seed"]))
        for run in record["runs"]
    }
    return {**record, "seeds": seeds, "results": ordered}
