"""How a file writes its table: the delimiter between fields, and class labels written as words.

Spreadsheets export with commas, semicolons (where the comma is the decimal mark) or tabs, often
with a byte-order mark; a lab writes classes as ``yes``/``no`` or ``active``/``inactive``. Both
are read from the file itself.
"""

from __future__ import annotations

import csv
import gzip
import math
from collections.abc import Sequence
from pathlib import Path

from ddpx.api import UserError, listed


def number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


MISSING = ("", "nan")


def open_table(path: Path):
    """The file as text (a ``.gz`` uncompressed), a UTF-8 byte-order mark dropped."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return path.open("r", encoding="utf-8-sig", newline="")


DELIMITERS = (",", ";", "\t", "|")


def delimiter_of(handle, smiles_column: str) -> str:
    """The file's delimiter: the one whose header names the SMILES column, else the one the
    first lines agree on, else a comma."""
    sample = handle.read(1 << 16)
    handle.seek(0)
    first = sample.splitlines()[0] if sample else ""
    for delimiter in DELIMITERS:
        if smiles_column in next(csv.reader([first], delimiter=delimiter), []):
            return delimiter
    try:
        return csv.Sniffer().sniff(sample, delimiters="".join(DELIMITERS)).delimiter
    except csv.Error:
        return ","


POSITIVE = {"1", "yes", "y", "true", "t", "active", "positive", "pos"}
NEGATIVE = {"0", "no", "n", "false", "f", "inactive", "negative", "neg"}


def word_classes(path: Path, column: str, values: list[str]) -> list[str] | None:
    """A column's two words, class 0's first; ``None`` when its labels are numbers (a cell that is
    neither 0 nor 1 is then a bad row, reported as such)."""
    present = [v for v in values if v.lower() not in MISSING]
    if not present or any(number(v) is not None for v in present):
        return None
    by_lower = list(dict.fromkeys(w.lower() for w in present))
    if len(by_lower) != 2:
        found = listed(list(dict.fromkeys(present)))
        raise UserError(
            f"dataset file '{path}' has {len(by_lower)} different label(s) in '{column}' ({found}); a label "
            "column of a classification task holds two classes: 0 and 1, or two words such as yes/no or "
            "active/inactive. Fix the column, or name another with dataset.label_column."
        )
    first, second = sorted(by_lower)
    if first in POSITIVE or second in NEGATIVE:
        first, second = second, first
    shown = {w.lower(): w for w in reversed(present)}  # each word as the file first writes it
    return [shown[first], shown[second]]


def label_words(path: Path, delimiter: str, columns: Sequence[str]) -> dict[str, list[str]]:
    """Each label column's two words, where its labels are words (a first pass over the file)."""
    with open_table(path) as handle:
        values: dict[str, list[str]] = {c: [] for c in columns}
        for row in csv.DictReader(handle, delimiter=delimiter):
            for column in columns:
                text = (row.get(column) or "").strip()
                if text and text not in values[column][-1:]:
                    values[column].append(text)
    found = {}
    for column in columns:
        words = word_classes(path, column, list(dict.fromkeys(values[column])))
        if words is not None:
            found[column] = words
    return found
