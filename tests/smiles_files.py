"""Small SMILES CSV files in the real on-disk shape of MoleculeNet's BBBP (for fast tests).

Label 1 exactly when the molecule carries a chlorine, which a small RNN learns in a few epochs.
Every molecule is one RDKit parses (``tests/test_smiles_reading.py`` checks it).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

FRAGMENTS = [
    "CC",
    "CCO",
    "c1ccccc1",
    "CC(=O)N",
    "C1CCNCC1",
    "OC",
    "C(=O)O",
    "c1ccncc1",
    "CN(C)C",
    "C#N",
    "c1cc[nH]c1",
    "C%10CC%10",
    "CS(=O)(=O)N",
    "CCN",
    "F",
    "C[C@@H](O)C",
    "Br",
]
# An end group (one bond) opens the molecule, closes it, or in between hangs from a carbon of its
# own; every other fragment bonds on both sides. So any chain is a molecule RDKit parses, and the
# graph and features models read every molecule the SMILES model reads.
END_GROUPS = {"F": ("F", "F"), "Br": ("Br", "Br"), "Cl": ("Cl", "Cl"), "I": ("I", "I"), "C#N": ("N#C", "C#N")}


def _written(parts: list[str]) -> str:
    out = []
    for k, part in enumerate(parts):
        if part not in END_GROUPS:
            out.append(part)
        elif k == 0 or k == len(parts) - 1:
            out.append(END_GROUPS[part][k > 0])
        else:
            out.append(f"C({part})")
    return "".join(out)


def molecule(rng: random.Random, chlorine: bool) -> str:
    parts = [rng.choice(FRAGMENTS) for _ in range(rng.randint(2, 5))]
    if chlorine:
        parts.insert(rng.randrange(len(parts) + 1), "Cl")
    return _written(parts)


CLASS_WORDS = ("CI", "CM", "CA")  # HIV's activity classes; read in alphabetical order: CA 0, CI 1, CM 2
CLASS_MARKS = ("Cl", "I", None)  # what tells each class: a chlorine, an iodine, neither


def write_classes_csv(path: Path, n: int = 90, seed: int = 0, *, words: tuple[str, ...] = CLASS_WORDS) -> Path:
    """HIV's shape for several classes: ``smiles,activity`` with a word per class, a third of each;
    each class's molecules carry its mark (``CLASS_MARKS``), so a small model tells them apart."""
    rng = random.Random(seed)
    lines = ["smiles,activity"]
    for i in range(n):
        parts = [rng.choice(FRAGMENTS) for _ in range(rng.randint(2, 5))]
        mark = CLASS_MARKS[i % 3]
        if mark:
            parts.insert(rng.randrange(len(parts) + 1), mark)
        lines.append(f"{_written(parts)},{words[i % 3]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_smiles_csv(
    path: Path,
    n: int = 240,
    seed: int = 0,
    *,
    bom: bool = True,
    extra_rows: str = "",
    smiles_column: str = "smiles",
    label_column: str = "p_np",
) -> Path:
    """BBBP's columns (``num,name,p_np,smiles``), CRLF endings, quoted names with commas."""
    rng = random.Random(seed)
    lines = [f"num,name,{label_column},{smiles_column}"]
    for i in range(n):
        label = i % 3 != 0  # 2/3 positive, like BBBP's imbalance
        lines.append(f'{i + 1},"compound {i}, salt",{int(label)},{molecule(rng, label)}')
    text = "\r\n".join(lines) + "\r\n" + extra_rows
    path.write_bytes(("\ufeff" if bom else "").encode() + text.encode("utf-8"))
    return path


LABELS = ["has Cl", "has, Br", "rare"]  # a space, and a comma (quoted), as in SIDER's column names


def _cells(i: int, smiles: str, n_labels: int) -> list[str]:
    """Label 0 is chlorine; label 1 bromine, a fifth of its cells missing; the last (of three or
    more) is missing for all but every tenth molecule; any others alternate the two rules, each
    with its own missing cells."""
    chlorine, bromine = "Cl" in smiles, "Br" in smiles
    cells = []
    for j in range(n_labels):
        if j == 0:
            cells.append(str(int(chlorine)))
        elif j == n_labels - 1 and n_labels >= 3:
            cells.append(str(i % 20 // 10) if i % 10 == 0 else "")
        else:
            rule = bromine if j % 2 else chlorine
            cells.append("" if i % (j + 4) == 0 else str(int(rule)))
    return cells


def write_multilabel_csv(
    path: Path,
    n: int = 300,
    seed: int = 0,
    *,
    labels: list[str] = LABELS,
    smiles_column: str = "smiles",
    gzip_it: bool = False,
) -> Path:
    """Tox21's shape: ``smiles``, then 0/1 label columns with empty cells for missing labels, then
    ``mol_id``; column names quoted (SIDER's hold commas); gzip-compressed like the published files."""
    rng = random.Random(seed)
    lines = [f"{smiles_column}," + ",".join(f'"{name}"' for name in labels) + ",mol_id"]
    for i in range(n):
        smiles = molecule(rng, i % 3 != 0)
        lines.append(f"{smiles},{','.join(_cells(i, smiles, len(labels)))},TOX{i}")
    data = ("\r\n".join(lines) + "\r\n").encode("utf-8")
    if gzip_it:
        import gzip

        data = gzip.compress(data)
    path.write_bytes(data)
    return path


TARGETS = ["log S", "melting, point"]  # a space, and a comma (quoted)


def target_values(smiles: str) -> tuple[float, float]:
    """Two measurements a small model learns: one from the carbon count, one from oxygen and
    nitrogen; far from zero and of different spreads, so standardisation matters."""
    carbons = smiles.count("C") + smiles.count("c")
    return -2.0 - 0.4 * carbons, 150.0 + 20.0 * smiles.count("O") - 15.0 * smiles.count("N")


def write_regression_csv(path: Path, n: int = 240, seed: int = 0, *, targets: list[str] = TARGETS) -> Path:
    """``smiles`` then numeric target columns (``TARGETS``), about one cell in six empty (a
    missing measurement), never both of a row."""
    rng = random.Random(seed)
    lines = ["smiles," + ",".join(f'"{name}"' for name in targets)]
    for i in range(n):
        smiles = molecule(rng, i % 2 == 0)
        values = target_values(smiles)[: len(targets)]
        cells = [f"{v:.3f}" if (i + j) % 6 or len(targets) == 1 else "" for j, v in enumerate(values)]
        lines.append(f"{smiles},{','.join(cells)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def predictions_file(path: Path, header: list[str], rows: list[list]) -> Path:
    """A ``reports/heldout_predictions.csv`` as ddpx writes it: the index, then the columns."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["index", *header])
        writer.writerows([i, *row] for i, row in enumerate(rows))
    return path
