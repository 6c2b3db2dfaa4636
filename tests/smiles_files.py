"""Small SMILES CSV files in the real on-disk shape of MoleculeNet's BBBP (for fast tests).

Label 1 exactly when the molecule carries a chlorine, which a small RNN learns in a few epochs.
"""

from __future__ import annotations

import random
from pathlib import Path

FRAGMENTS = ["CC", "CCO", "c1ccccc1", "CC(=O)N", "C1CCNCC1", "OC", "C(=O)O", "c1ccncc1", "CN(C)C", "C#N",
             "[nH]1cccc1", "C%10CC%10", "S(=O)(=O)N", "CCN", "F", "[C@@H](O)C", "Br"]


def molecule(rng: random.Random, chlorine: bool) -> str:
    parts = [rng.choice(FRAGMENTS) for _ in range(rng.randint(2, 5))]
    if chlorine:
        parts.insert(rng.randrange(len(parts) + 1), "Cl")
    return "".join(parts)


def write_smiles_csv(path: Path, n: int = 240, seed: int = 0, *, bom: bool = True, extra_rows: str = "",
                     smiles_column: str = "smiles", label_column: str = "p_np") -> Path:
    """BBBP's columns (``num,name,p_np,smiles``), CRLF endings, quoted names with commas."""
    rng = random.Random(seed)
    lines = [f"num,name,{label_column},{smiles_column}"]
    for i in range(n):
        label = i % 3 != 0  # 2/3 positive, like BBBP's imbalance
        lines.append(f'{i + 1},"compound {i}, salt",{int(label)},{molecule(rng, label)}')
    text = "\r\n".join(lines) + "\r\n" + extra_rows
    path.write_bytes(("\ufeff" if bom else "").encode() + text.encode("utf-8"))
    return path
