"""Reading a MoleculeNet-style CSV (or ``.csv.gz``): one SMILES column and one or several binary
label columns, or one label column of several classes.

Robust to real files as spreadsheets write them: comma, semicolon or tab between fields (found
by reading the file), a UTF-8 byte-order mark, CRLF line endings, quoted fields containing
commas, blank lines. Class labels may be 0/1 or two words per column (``yes``/``no``,
``active``/``inactive``, ``true``/``false``, or any two strings: the second in alphabetical
order is class 1 unless the words say otherwise); the words are kept so predictions answer in them.
One label column may hold three classes or more, as words (HIV's ``CI``/``CM``/``CA``: classes in
alphabetical order) or as the integers 0 to K-1. Bad rows — an empty SMILES, a label that is not
0/1 (or none of the column's classes), characters the tokenizer cannot represent — are counted
and reported with their line numbers, then skipped (or, with ``strict``, refused). With several
label columns (Tox21, SIDER, ClinTox) an empty or ``NaN`` cell is a missing label (``nan`` in the
table), as MoleculeNet publishes them; a row with no label at all is skipped. A regression file (``regression=True``: ESOL, Lipophilicity,
FreeSolv, a user's own measurements) has numeric targets instead, read the same way.
"""

from __future__ import annotations

import csv
import gzip
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ddpx.api import UserError, did_you_mean, listed
from ddpx.plugins.smiles.csv_format import MISSING, class_of, delimiter_of, label_words, number, open_table
from ddpx.plugins.smiles.tokenizer import tokenize

SHOWN_ROWS = 5


@dataclass
class SmilesTable:
    """The usable molecules of a file, and the rows that were skipped, by reason."""

    smiles: list[str] = field(default_factory=list)
    tokens: list[list[str]] = field(default_factory=list)
    labels: list = field(default_factory=list)  # one value per row; with several columns a tuple, nan if missing
    label_names: list[str] = field(default_factory=list)
    skipped: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    numbers_not_binary: list[int] = field(default_factory=list)  # lines whose 0/1 label is another number
    regression: bool = False
    label_words: dict[str, list[str]] = field(default_factory=dict)  # column -> [class 0's word, class 1's]
    classes: list[str] = field(default_factory=list)  # one label column of three classes or more: their names
    lines: list[int] = field(default_factory=list)  # each molecule's line in the file

    def skipped_report(self) -> str:
        return "; ".join(
            f"{len(lines)} with {reason} (line {line_list(lines)})" for reason, lines in self.skipped.items()
        )


def line_list(lines: Sequence[int]) -> str:
    """The first few of ``lines``, comma-separated ("3, 8, 13, 21, 40, ..." for more)."""
    return ", ".join(map(str, lines[:SHOWN_ROWS])) + (", ..." if len(lines) > SHOWN_ROWS else "")


def _label(text: str) -> int | None:
    value = number(text)
    return int(value) if value in (0.0, 1.0) else None


def _labels(
    row: dict, columns: Sequence[str], regression: bool, words: dict[str, dict[str, int]]
) -> tuple[object, str | None]:
    """The row's label (one column) or labels (several: nan where missing), or why they are bad;
    ``words`` maps a column's class names (lower case) to their classes."""
    texts = [(row.get(column) or "").strip() for column in columns]
    kind = "a target that is not a number" if regression else "a label that is not 0/1"
    if len(words.get(columns[0], ())) > 2:
        kind = "a label that is none of its classes"

    def read(text: str, column: str):
        if regression:
            return number(text)
        return class_of(text, words[column]) if column in words else _label(text)

    if len(columns) == 1:
        label = read(texts[0], columns[0])
        return label, None if label is not None else f"{kind} in '{columns[0]}'"
    values = []
    for column, text in zip(columns, texts):
        label = float("nan") if text.lower() in MISSING else read(text, column)
        if label is None:
            return None, f"{kind} or empty in '{column}'"
        values.append(float(label))
    if all(value != value for value in values):
        return None, f"no {'target' if regression else 'label'} in any {'target' if regression else 'label'} column"
    return tuple(values), None


def _check(
    smiles: str, label_problem: str | None, canonical: Callable[[str], str | None] | None
) -> tuple[str | None, list[str] | None]:
    """(why the row is bad, None) or (None, its tokens)."""
    if not smiles:
        return "an empty SMILES", None
    if label_problem:
        return label_problem, None
    if canonical is not None:
        smiles = canonical(smiles) or ""
        if not smiles:
            return "a SMILES RDKit cannot parse", None
    tokens = tokenize(smiles)
    if tokens is None:
        return "characters the SMILES tokenizer cannot represent", None
    return None, tokens


def _check_header(path: Path, header: Sequence[str] | None, smiles_column: str, label_columns: Sequence[str]) -> None:
    key = "label_column" if len(label_columns) == 1 else "label_columns"
    if not header:
        raise UserError(
            f"dataset file '{path}' is empty; it needs a header row with '{smiles_column}' and "
            f"{', '.join(repr(c) for c in label_columns)}."
        )
    for key, column in (("smiles_column", smiles_column), *((key, c) for c in label_columns)):
        if column not in header:
            hint = did_you_mean(column, header) or (_smiles_like(header) if key == "smiles_column" else "")
            raise UserError(
                f"dataset file '{path}' has no column '{column}'.{hint} Its columns are: "
                f"{listed(header)}. Set dataset.{key}."
            )


def _smiles_like(header: Sequence[str]) -> str:
    """`` Did you mean 'X'?`` for the first column whose name says it holds SMILES, or ``""``."""
    named = [c for c in header if "smiles" in c.lower()]
    return f" Did you mean '{named[0]}'?" if named else ""


def read_smiles_csv(
    path: Path,
    smiles_column: str,
    label_columns: str | Sequence[str],
    *,
    strict: bool,
    canonical: Callable[[str], str | None] | None = None,
    regression: bool = False,
) -> SmilesTable:
    """Read ``path``; ``canonical`` (RDKit) maps a SMILES to its canonical form or ``None``;
    ``regression``: the label columns hold numbers (targets), not 0/1."""
    label_columns = [label_columns] if isinstance(label_columns, str) else list(label_columns)
    try:
        handle = open_table(path)
    except IsADirectoryError:
        raise UserError(f"dataset file '{path}' is a folder; set dataset.path to the CSV file.") from None
    table = SmilesTable(label_names=list(label_columns), regression=regression)
    try:
        with handle:
            delimiter = delimiter_of(handle, smiles_column)
            reader = csv.DictReader(handle, delimiter=delimiter)
            _check_header(path, reader.fieldnames, smiles_column, label_columns)
            found = {} if regression else label_words(path, delimiter, label_columns)
            table.label_words, table.classes = _binary_or_several(path, found, label_columns)
            codes = {c: {w.lower(): i for i, w in enumerate(words)} for c, words in found.items()}
            for row in reader:
                line = reader.line_num
                smiles = (row.get(smiles_column) or "").strip()
                if not any((value or "").strip() for value in row.values() if isinstance(value, str)):
                    continue  # a blank line, or one made of separators only
                label, problem = _labels(row, label_columns, regression, codes)
                if problem and not regression and _other_numbers(row, label_columns):
                    table.numbers_not_binary.append(line)
                reason, tokens = _check(smiles, problem, canonical)
                if tokens is not None and canonical is not None:
                    smiles = "".join(tokens)
                if reason:
                    table.skipped[reason].append(line)
                    continue
                table.smiles.append(smiles)
                table.tokens.append(tokens)
                table.labels.append(label)
                table.lines.append(line)
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError):
        raise UserError(
            f"dataset file '{path}' is not UTF-8 text (is it a binary or compressed file?). Point dataset.path to the CSV."
        ) from None
    except csv.Error as exc:
        raise UserError(f"dataset file '{path}' is not a readable CSV ({exc}).") from None

    if table.skipped and strict:
        raise UserError(
            f"dataset file '{path}' has bad rows: {table.skipped_report()}. Fix them, or set dataset.strict=false to skip them."
        )
    check_label_columns(path, table)
    return table


def _binary_or_several(
    path: Path, found: dict[str, list[str]], columns: Sequence[str]
) -> tuple[dict[str, list[str]], list[str]]:
    """The columns whose two classes are words, and the classes of a column of three or more (one
    label column only: several label columns are binary, one output each)."""
    several = {column: names for column, names in found.items() if len(names) > 2}
    if several and len(columns) > 1:
        column, names = next(iter(several.items()))
        raise UserError(
            f"column '{column}' of '{path}' holds {len(names)} classes ({listed(names[:6])}), and with several label "
            "columns each holds two (0/1 or two words). Train it alone: dataset.label_column="
            f"{column}, without dataset.label_columns."
        )
    return {column: names for column, names in found.items() if len(names) == 2}, next(iter(several.values()), [])


def _other_numbers(row: dict, columns: Sequence[str]) -> bool:
    """A label cell holds a number other than 0 and 1 (a measurement, in a regression file)."""
    return any(number((row.get(c) or "").strip()) not in (None, 0.0, 1.0) for c in columns)


def check_label_columns(path: Path, table: SmilesTable) -> None:
    """One label column needs both classes; of several, none may be empty throughout. A
    regression target needs at least two different values."""
    if table.regression:
        check_target_columns(path, table)
        return
    if len(table.numbers_not_binary) > len(table.labels):  # mostly measurements: a regression file
        raise UserError(measurements_not_classes(path, table.numbers_not_binary))
    if len(table.label_names) == 1:
        classes = set(table.labels)
        if len(classes) < 2:
            names = table.classes or table.label_words.get(table.label_names[0]) or ["0", "1"]
            found = f"only label {names[classes.pop()]}" if classes else "no usable rows"
            needs = "both 0 and 1" if not table.classes else f"two of its classes ({listed(names)}) or more"
            raise UserError(
                f"dataset file '{path}' has {found} in '{table.label_names[0]}'; a classification task needs "
                f"{needs}. Check dataset.label_column."
            )
        return
    if not table.labels:
        raise UserError(
            f"dataset file '{path}' has no usable rows. Check dataset.smiles_column and dataset.label_columns."
        )
    for j, name in enumerate(table.label_names):
        if all(row[j] != row[j] for row in table.labels):
            raise UserError(
                f"label column '{name}' of '{path}' holds no label (every cell is empty or NaN); "
                "remove it from dataset.label_columns."
            )


def measurements_not_classes(path: Path | str, lines: Sequence[int]) -> str:
    return (
        f"dataset file '{path}' holds numbers other than 0 and 1 in its label column(s) (line {line_list(lines)}): "
        "measurements, not classes. Train on them as a regression (task smiles_csv with "
        "dataset.task_type=regression), or give classes: 0/1, the integers 0 to K-1, or words."
    )


def check_target_columns(path: Path, table: SmilesTable) -> None:
    if not table.labels:
        raise UserError(
            f"dataset file '{path}' has no usable rows. Check dataset.smiles_column and the target columns."
        )
    rows = [row if isinstance(row, tuple) else (row,) for row in table.labels]
    for j, name in enumerate(table.label_names):
        values = {row[j] for row in rows if row[j] == row[j]}
        if len(values) < 2:
            raise UserError(
                f"target column '{name}' of '{path}' holds {len(values)} distinct value(s); a regression "
                "target needs several. Check the column, or remove it from the target columns."
            )
