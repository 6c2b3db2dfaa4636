"""Molecular graphs stored compactly: what determines Chemprop's feature arrays, not float copies.

Chemprop's default featurizer (``SimpleMoleculeMolGraphFeaturizer``) gives each atom a multi-hot
row of 72 values and each bond a 0/1 row of 14, the same row for both directions of a bond, and
lists the directed bonds in pairs (u→v, v→u) with each one's reverse beside it. A part of the
store keeps, for its molecules:

- ``atom_table`` (distinct atom rows, float32) and ``atom_codes`` (uint16 or uint32 per atom: the
  row of the table);
- ``bond_table`` (distinct bond rows) and ``bond_codes`` (one per undirected bond);
- ``bond_atoms`` (u, v) of each undirected bond, uint16 (uint32 for a molecule over 65 535 atoms);
- where each molecule's atoms and bonds start, and whether its SMILES parsed.

A molecule's ``MolGraph`` is rebuilt from them when a batch asks, equal to the packed float32 and
int32 arrays of Chemprop's graph, value for value: its atom rows looked up, each bond row
repeated for both directions, the edge list interleaved and the reverse edges paired. About 8
bytes per atom and bond instead of 290 per atom and 68 per directed bond.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ARRAYS = (
    "atom_table",
    "atom_codes",
    "bond_table",
    "bond_codes",
    "bond_atoms",
    "atom_offsets",
    "bond_offsets",
    "parsed",
)


@dataclass(frozen=True)
class GraphPart:
    """The compact graphs of consecutive molecules."""

    atom_table: np.ndarray  # (distinct atom rows, atom features) float32
    atom_codes: np.ndarray  # (atoms,) uint16 or uint32
    bond_table: np.ndarray  # (distinct bond rows, bond features) float32
    bond_codes: np.ndarray  # (undirected bonds,) uint16 or uint32
    bond_atoms: np.ndarray  # (undirected bonds, 2) uint16 or uint32: (u, v) within the molecule
    atom_offsets: np.ndarray  # (molecules + 1,) int64
    bond_offsets: np.ndarray  # (molecules + 1,) int64
    parsed: np.ndarray  # (molecules,) bool

    def __len__(self) -> int:
        return len(self.parsed)

    def graph(self, row: int):
        """Chemprop's ``MolGraph`` of molecule ``row`` of this part."""
        from chemprop.data import MolGraph

        a0, a1 = self.atom_offsets[row], self.atom_offsets[row + 1]
        b0, b1 = self.bond_offsets[row], self.bond_offsets[row + 1]
        V = self.atom_table[self.atom_codes[a0:a1]]
        E = np.repeat(self.bond_table[self.bond_codes[b0:b1]], 2, axis=0)
        pairs = self.bond_atoms[b0:b1].astype(np.int32)
        edge_index = np.empty((2, 2 * len(pairs)), np.int32)
        edge_index[0, 0::2], edge_index[1, 0::2] = pairs[:, 0], pairs[:, 1]
        edge_index[0, 1::2], edge_index[1, 1::2] = pairs[:, 1], pairs[:, 0]
        rev_edge_index = np.arange(2 * len(pairs), dtype=np.int32) ^ 1  # each directed bond's twin
        return MolGraph(V, E, edge_index, rev_edge_index)

    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in ARRAYS)

    def save(self, folder: Path) -> None:
        for name in ARRAYS:
            np.save(folder / f"{name}.npy", getattr(self, name))

    @classmethod
    def load(cls, folder: Path) -> GraphPart:
        return cls(**{name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in ARRAYS})


class _Codes:
    """Distinct rows, numbered in the order first seen."""

    def __init__(self, width: int):
        self.width, self.codes, self.rows = width, {}, []

    def code(self, row: np.ndarray) -> int:
        key = row.tobytes()
        if key not in self.codes:
            self.codes[key] = len(self.rows)
            self.rows.append(row)
        return self.codes[key]

    def table(self) -> np.ndarray:
        return np.array(self.rows, np.float32).reshape(len(self.rows), self.width)


def _smallest(values: array) -> np.ndarray:
    data = np.frombuffer(values, np.uint32) if len(values) else np.zeros(0, np.uint32)
    return data.astype(np.uint16) if not len(data) or data.max() < 2**16 else data.copy()


def featurizer():
    """Chemprop's default molecule featurizer (what ``chemprop train`` featurizes with)."""
    from ddpx.plugins.smiles.chemprop_check import import_chemprop

    import_chemprop("a model that reads molecular graphs")
    from chemprop.featurizers import SimpleMoleculeMolGraphFeaturizer

    return SimpleMoleculeMolGraphFeaturizer()


def featurize_part(smiles: Sequence[str]) -> GraphPart:
    """Every SMILES featurized with Chemprop's default featurizer, in order, stored compactly."""
    from chemprop.utils import make_mol

    featurize_one = featurizer()
    atoms, bonds = _Codes(featurize_one.atom_fdim), _Codes(featurize_one.bond_fdim)
    atom_codes, bond_codes, bond_atoms = array("I"), array("I"), array("I")
    atom_offsets, bond_offsets, parsed = [0], [0], []
    for text in smiles:
        try:
            graph = featurize_one(make_mol(text))
        except (RuntimeError, ValueError):  # RDKit cannot parse it (Chemprop raises RuntimeError)
            graph = None
        parsed.append(graph is not None)
        if graph is not None:
            V, E = np.asarray(graph.V, np.float32), np.asarray(graph.E, np.float32)
            atom_codes.extend(atoms.code(row) for row in V)
            bond_codes.extend(bonds.code(row) for row in E[0::2])
            bond_atoms.extend(int(i) for i in np.asarray(graph.edge_index)[:, 0::2].T.ravel())
        atom_offsets.append(len(atom_codes))
        bond_offsets.append(len(bond_codes))
    return GraphPart(
        atom_table=atoms.table(),
        atom_codes=_smallest(atom_codes),
        bond_table=bonds.table(),
        bond_codes=_smallest(bond_codes),
        bond_atoms=_smallest(bond_atoms).reshape(-1, 2),
        atom_offsets=np.asarray(atom_offsets, np.int64),
        bond_offsets=np.asarray(bond_offsets, np.int64),
        parsed=np.asarray(parsed, bool),
    )


class GraphStore:
    """A table's graphs, in row order, over parts of ``part_size`` consecutive molecules."""

    def __init__(self, parts: list[GraphPart], part_size: int, atom_fdim: int, bond_fdim: int):
        self.parts, self.part_size = parts, part_size
        self.atom_fdim, self.bond_fdim = atom_fdim, bond_fdim
        self.parsed = np.concatenate([np.asarray(p.parsed) for p in parts]) if parts else np.zeros(0, bool)

    def __len__(self) -> int:
        return len(self.parsed)

    def graph(self, row: int):
        """Chemprop's ``MolGraph`` of molecule ``row``."""
        return self.parts[row // self.part_size].graph(row % self.part_size)

    def nbytes(self) -> int:
        return sum(p.nbytes() for p in self.parts)
