"""Reading a MoleculeNet-style CSV: one SMILES column and one binary label column.

Robust to real files: a UTF-8 byte-order mark, CRLF line endings, quoted fields containing
commas, blank lines. Bad rows — an empty SMILES, a label that is not 0/1, characters the
tokenizer cannot represent — are counted and reported with their line numbers, then skipped
(or, with ``strict``, refused).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ddpx.api import UserError, did_you_mean
from ddpx.plugins.smiles.tokenizer import tokenize

SHOWN_ROWS = 5


@dataclass
class SmilesTable:
    """The usable molecules of a file, and the rows that were skipped, by reason."""

    smiles: list[str] = field(default_factory=list)
    tokens: list[list[str]] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    skipped: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

    def skipped_report(self) -> str:
        parts = []
        for reason, lines in self.skipped.items():
            shown = ", ".join(map(str, lines[:SHOWN_ROWS])) + (", ..." if len(lines) > SHOWN_ROWS else "")
            parts.append(f"{len(lines)} with {reason} (line {shown})")
        return "; ".join(parts)


def _label(text: str) -> int | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value in (0.0, 1.0) else None


def _check(smiles: str, label: int | None, label_column: str,
           canonical: Callable[[str], str | None] | None) -> tuple[str | None, list[str] | None]:
    """(why the row is bad, None) or (None, its tokens)."""
    if not smiles:
        return "an empty SMILES", None
    if label is None:
        return f"a label that is not 0/1 in '{label_column}'", None
    if canonical is not None:
        smiles = canonical(smiles) or ""
        if not smiles:
            return "a SMILES RDKit cannot parse", None
    tokens = tokenize(smiles)
    if tokens is None:
        return "characters the SMILES tokenizer cannot represent", None
    return None, tokens


def read_smiles_csv(path: Path, smiles_column: str, label_column: str, *, strict: bool,
                    canonical: Callable[[str], str | None] | None = None) -> SmilesTable:
    """Read ``path``; ``canonical`` (RDKit) maps a SMILES to its canonical form or ``None``."""
    try:
        handle = path.open("r", encoding="utf-8-sig", newline="")
    except IsADirectoryError:
        raise UserError(f"dataset file '{path}' is a folder; set dataset.path to the CSV file.") from None
    table = SmilesTable()
    try:
        with handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames
            if not header:
                raise UserError(f"dataset file '{path}' is empty; it needs a header row with '{smiles_column}' and '{label_column}'.")
            for key, column in (("smiles_column", smiles_column), ("label_column", label_column)):
                if column not in header:
                    raise UserError(
                        f"dataset file '{path}' has no column '{column}'.{did_you_mean(column, header)} "
                        f"Its columns are: {', '.join(header)}. Set dataset.{key}=NAME."
                    )
            for row in reader:
                line = reader.line_num
                smiles = (row.get(smiles_column) or "").strip()
                label_text = (row.get(label_column) or "").strip()
                if not any((value or "").strip() for value in row.values() if isinstance(value, str)):
                    continue  # a blank line, or one made of separators only
                label = _label(label_text)
                reason, tokens = _check(smiles, label, label_column, canonical)
                if tokens is not None and canonical is not None:
                    smiles = "".join(tokens)
                if reason:
                    table.skipped[reason].append(line)
                    continue
                table.smiles.append(smiles)
                table.tokens.append(tokens)
                table.labels.append(label)
    except UnicodeDecodeError:
        raise UserError(f"dataset file '{path}' is not UTF-8 text (is it a binary or compressed file?). Point dataset.path to the CSV.") from None
    except csv.Error as exc:
        raise UserError(f"dataset file '{path}' is not a readable CSV ({exc}).") from None

    if table.skipped and strict:
        raise UserError(f"dataset file '{path}' has bad rows: {table.skipped_report()}. Fix them, or set dataset.strict=false to skip them.")
    classes = set(table.labels)
    if len(classes) < 2:
        found = f"only label {classes.pop()}" if classes else "no usable rows"
        raise UserError(
            f"dataset file '{path}' has {found} in '{label_column}'; a binary task needs both 0 and 1. "
            "Check dataset.label_column."
        )
    return table
