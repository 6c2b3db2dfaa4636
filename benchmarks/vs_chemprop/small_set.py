"""The small regression set (``run.py --set lipophilicity_small``): a few hundred molecules drawn,
seeded, from MoleculeNet's Lipophilicity file and written as a CSV by the benchmark itself, so that
anyone with the same source file draws the same molecules (the table names the drawn file's md5).

The rows keep the source's header and order (CRLF line endings become LF); which rows is
``random.Random(seed).sample`` over the data rows, sorted back into file order."""

from __future__ import annotations

import csv
import hashlib
import random
from pathlib import Path

SMALL_SIZE, SMALL_SEED = 600, 0


def draw_small_set(source: Path, out: Path, size: int = SMALL_SIZE, seed: int = SMALL_SEED) -> Path:
    """Write ``size`` data rows of ``source`` (a CSV with a header), drawn with ``seed``, to ``out``."""
    with source.open(newline="", encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    if size > len(rows):
        raise SystemExit(f"{source} has {len(rows)} molecules, fewer than the {size} to draw")
    kept = sorted(random.Random(seed).sample(range(len(rows)), size))
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows[i] for i in kept)
    return out


def md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()
