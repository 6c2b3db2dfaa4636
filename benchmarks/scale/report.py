"""The scale table, from a record (what ``run.py --record`` writes, or a committed one) or several: one
row per size, then the machine, the commit and what Chemprop's peak memory per molecule says of the sizes
it was not run at (in words: extrapolated, never a measured number)."""

from __future__ import annotations

HEADER = (
    "| molecules | prepare s (graphs + targets) | bytes/molecule (graphs + targets) | "
    "peak private MiB per rank (prepare; train) | molecules/s, 1 rank | molecules/s, 2 ranks | "
    "Chemprop build s | Chemprop peak private MiB |"
)


def _number(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _train(row: dict, ranks: str) -> str:
    """Molecules/s of the epoch at ``ranks``; "not run" for a size that trained no epoch."""
    if not row.get("train"):
        return "not run"
    return _number(row["train"].get(ranks, {}).get("samples_per_s"))


def _chemprop_cells(row: dict) -> tuple[str, str]:
    chemprop = row.get("chemprop")
    if chemprop is None:
        return "not run", "not run"
    if chemprop.get("stopped"):
        phase, where = chemprop.get("stopped_in"), ""  # records from before builds said how far have none
        if phase == "datapoints":
            where = f" making datapoints, {chemprop['molecules_made']:,} made"
        elif phase:
            where = f" in its {phase}"
        return "stopped", f"> {_number(chemprop['limit_mb'])} (stopped{where})"
    return _number(chemprop["build_s"], 1), _number(chemprop["peak_rss_anon_mb"])


def table_row(row: dict) -> str:
    n = row["molecules"]
    graphs, targets = row["graphs_bytes"] / n, row["targets_bytes"] / n
    peak_train = max((v["peak_rss_anon_mb"] or 0 for v in row.get("train", {}).values()), default=None)
    cells = [
        f"{n:,}",
        f"{row['graphs_s'] + row['targets_s']:.1f} ({row['graphs_s']:.1f} + {row['targets_s']:.1f})",
        f"{graphs + targets:.0f} ({graphs:.0f} + {targets:.0f})",
        f"{_number(row['prepare_peak_rss_anon_mb'])}; {_number(peak_train)}",
        _train(row, "1"),
        _train(row, "2"),
        *_chemprop_cells(row),
    ]
    return "| " + " | ".join(cells) + " |"


def chemprop_note(rows: list[dict], memory_mb: float | None) -> str | None:
    """Chemprop's private memory per molecule at the largest size it finished, and what that would
    come to at the largest size of the table: a sentence, labelled as extrapolated."""
    done = [r for r in rows if r.get("chemprop") and not r["chemprop"].get("stopped")]
    if not done:
        return None
    last = max(done, key=lambda r: r["molecules"])
    chemprop = last["chemprop"]
    added = chemprop["peak_rss_anon_mb"] - chemprop.get("before_build_mb", 0.0)
    per = added * 2**20 / last["molecules"]
    largest = max(r["molecules"] for r in rows)
    note = (
        f"Chemprop's build adds {added:,.0f} MiB of private memory at {last['molecules']:,} molecules "
        f"(its peak over the process before the build), {per / 1024:.1f} KiB a molecule"
    )
    if largest > last["molecules"]:
        guess = per * largest / 2**30
        note += f"; at that rate (extrapolated, not measured) {largest:,} molecules would add about {guess:.1f} GiB"
        if memory_mb:
            note += f" against this machine's {memory_mb / 1024:.0f} GiB"
    return note + "."


def settings_line(record: dict) -> str:
    """The machine, the commit and the date a record was measured with."""
    return (
        f"{record.get('machine', 'this machine')}; ddpx {record.get('commit', 'unknown')}; "
        "`moses_pretrain_dmpnn`, preparation on 2 ranks, one epoch per number of ranks"
        + (f"; {record['date']}." if record.get("date") else ".")
    )


def markdown(*records: dict) -> str:
    """One table of the records' rows (several records: the sizes of several runs, each line under
    the table once), then Chemprop's memory per molecule over all of them."""
    rows = sorted((row for record in records for row in record["rows"]), key=lambda r: r["molecules"])
    lines = [HEADER, "|" + " --- |" * 8]
    lines += [table_row(row) for row in rows]
    lines.append("")
    lines += list(dict.fromkeys(settings_line(record) for record in records))
    note = chemprop_note(rows, records[0].get("memory_mb"))
    if note:
        lines.append(note)
    lines += list(dict.fromkeys(f"**{record['label']}**" for record in records if record.get("label")))
    return "\n".join(lines)
