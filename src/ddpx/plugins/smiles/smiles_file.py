"""A plain file of SMILES (a CSV, gzip-compressed or not, with a SMILES column and maybe others), read
a column at a time: what a pretraining task reads, without labels."""

from __future__ import annotations

import csv
from pathlib import Path

from ddpx.api import UserError


def open_smiles_file(path: Path):
    """The file as text: gzip when it starts as gzip does, whatever its name."""
    import gzip

    with path.open("rb") as raw:
        compressed = raw.read(2) == b"\x1f\x8b"
    if compressed:
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return path.open("r", encoding="utf-8-sig", newline="")


def read_smiles(path: Path, column: str, limit: int = 0) -> list[str]:
    """The column's cells, in file order (the first ``limit`` rows when it is above 0)."""
    with open_smiles_file(path) as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        if column not in header:
            shown = ", ".join(repr(name) for name in header[:8]) or "none"
            raise UserError(
                f"'{path}' has no column {column!r} (its columns: {shown}). Name the SMILES column with "
                "dataset.smiles_column=NAME."
            )
        at = header.index(column)
        smiles = []
        for row in reader:
            if limit and len(smiles) >= limit:
                break
            if row:
                smiles.append(row[at].strip() if at < len(row) else "")
        return smiles
