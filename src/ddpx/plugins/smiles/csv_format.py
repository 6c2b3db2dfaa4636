"""How a file writes its table: the delimiter between fields, and class labels written as words.

Spreadsheets export with commas, semicolons (where the comma is the decimal mark) or tabs, often
with a byte-order mark; a lab writes classes as ``yes``/``no`` or ``active``/``inactive``, and
several classes as words (HIV's ``CI``/``CM``/``CA``) or as the integers 0 to K-1. All of it is
read from the file itself.
"""

from __future__ import annotations

import csv
import gzip
import math
from collections.abc import Sequence
from functools import lru_cache
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
MOST_CLASSES = 100  # more different labels in a column is a column of names or measurements, not classes


def column_classes(path: Path, column: str, values: list[str]) -> list[str] | None:
    """A column's classes, class 0's first, where its labels name them: two words (class 1 the
    second alphabetically, unless the words say which is positive), three or more words (in
    alphabetical order), or the integers 0 to K-1 for K of 3 or more. ``None`` where its labels are
    0/1 (a cell that is neither is then a bad row, or a measurement, reported as such)."""
    present = [v for v in values if v.lower() not in MISSING]
    numbers = [number(v) for v in present]
    if not present:
        return None
    if any(n is not None for n in numbers):  # 0/1, the integers 0 to K-1, or measurements
        return integer_classes(numbers) if None not in numbers else None
    by_lower = list(dict.fromkeys(w.lower() for w in present))
    if not 2 <= len(by_lower) <= MOST_CLASSES:
        found = listed(list(dict.fromkeys(present))[:5]) + (", ..." if len(by_lower) > 5 else "")
        raise UserError(
            f"dataset file '{path}' has {len(by_lower)} different label(s) in '{column}' ({found}); a label "
            "column of a classification task holds two classes or more (at most "
            f"{MOST_CLASSES}): 0 and 1, 0 to K-1, or words such as yes/no or CI/CM/CA. Fix the column, or "
            "name another with dataset.label_column."
        )
    ordered = sorted(by_lower)
    if len(ordered) == 2 and (ordered[0] in POSITIVE or ordered[1] in NEGATIVE):
        ordered.reverse()
    shown = {w.lower(): w for w in reversed(present)}  # each word as the file first writes it
    return [shown[w] for w in ordered]


def integer_classes(numbers: list[float | None]) -> list[str] | None:
    """``["0", ..., "K-1"]`` where ``numbers`` are exactly the integers 0 to K-1, K from 3 on."""
    distinct = set(numbers)
    if 3 <= len(distinct) <= MOST_CLASSES and distinct == set(range(len(distinct))):
        return [str(k) for k in range(len(distinct))]
    return None


def class_of(text: str, codes: dict[str, int]) -> int | None:
    """The class ``text`` names in a column whose classes are ``codes`` (lower-case name -> class);
    an integer class may be written 2 or 2.0."""
    code = codes.get(text.lower())
    if code is None and (value := number(text)) is not None and value.is_integer():
        code = codes.get(str(int(value)))
    return code


def label_words(path: Path, delimiter: str, columns: Sequence[str]) -> dict[str, list[str]]:
    """Each label column's classes, where its labels name them (a first pass over the file)."""
    with open_table(path) as handle:
        values: dict[str, list[str]] = {c: [] for c in columns}
        for row in csv.DictReader(handle, delimiter=delimiter):
            for column in columns:
                text = (row.get(column) or "").strip()
                if text and text not in values[column][-1:]:
                    values[column].append(text)
    found = {}
    for column in columns:
        words = column_classes(path, column, list(dict.fromkeys(values[column])))
        if words is not None:
            found[column] = words
    return found


def holds_several_classes(path_text: str, smiles_column: str, column: str) -> bool:
    """Whether the file's label column holds three classes or more (``False`` when the file cannot
    tell: it is missing or unreadable, which the task's check reports). Read once per version of
    the file: both sides of a launch ask."""
    path = Path(path_text).expanduser()
    try:
        stat = path.stat()
        return _several_classes(str(path.resolve()), stat.st_mtime_ns, stat.st_size, smiles_column, column)
    except (OSError, UserError, UnicodeDecodeError, csv.Error, gzip.BadGzipFile, EOFError):
        return False


@lru_cache(maxsize=8)
def _several_classes(path_text: str, modified: int, size: int, smiles_column: str, column: str) -> bool:
    path = Path(path_text)
    with open_table(path) as handle:
        delimiter = delimiter_of(handle, smiles_column)
        if column not in next(csv.reader(handle, delimiter=delimiter), []):
            return False
    return len(label_words(path, delimiter, [column]).get(column, [])) > 2
