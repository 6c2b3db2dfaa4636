"""Pretraining targets: a small set of fast RDKit descriptors of each molecule.

What a D-MPNN learns to predict from the graph alone on a large unlabelled set (descriptor
pretraining, as Chemprop's CheMeleon does with Mordred's descriptors), chosen for speed: the
whole set costs about 0.5 ms of CPU a molecule, parsing included (measured on 2 000 BBBP
molecules: ``docs/pretraining.md``), where Chemprop's ``v1_rdkit_2d_normalized`` costs 21 ms. :data:`NAMES` lists them in
column order: RDKit's ``Descriptors``/``rdMolDescriptors`` calculators of size, polarity and
lipophilicity (Crippen's logP and molar refractivity, TPSA, Labute's surface area), hydrogen-bond
donors and acceptors, rotatable bonds, rings of each kind, the fraction of sp3 carbons, stereo
centres, Kier-Hall shape and connectivity indices, and from one pass over the atoms the formal
charge, hydrogens, aromatic atoms and the count of each common element. A molecule RDKit cannot
parse has a row of NaN (it has no graph either, and leaves its split); a value RDKit cannot
compute is NaN too, and the loss leaves that cell out.

The molecule is RDKit's ``MolFromSmiles`` (sanitised, implicit hydrogens), so the values are the
ones ``rdkit.Chem.Descriptors`` gives for that SMILES.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

SET = "rdkit_fast_v1"  # the set's name: what the cache and a run's info record
_CALCULATORS = (
    ("MolWt", "Descriptors", "MolWt"),
    ("MolLogP", "Crippen", "MolLogP"),
    ("MolMR", "Crippen", "MolMR"),
    ("TPSA", "rdMolDescriptors", "CalcTPSA"),
    ("LabuteASA", "rdMolDescriptors", "CalcLabuteASA"),
    ("NumHDonors", "rdMolDescriptors", "CalcNumHBD"),
    ("NumHAcceptors", "rdMolDescriptors", "CalcNumHBA"),
    ("NumRotatableBonds", "rdMolDescriptors", "CalcNumRotatableBonds"),
    ("NumHeteroatoms", "rdMolDescriptors", "CalcNumHeteroatoms"),
    ("RingCount", "rdMolDescriptors", "CalcNumRings"),
    ("NumAromaticRings", "rdMolDescriptors", "CalcNumAromaticRings"),
    ("NumAliphaticRings", "rdMolDescriptors", "CalcNumAliphaticRings"),
    ("NumSaturatedRings", "rdMolDescriptors", "CalcNumSaturatedRings"),
    ("NumAromaticHeterocycles", "rdMolDescriptors", "CalcNumAromaticHeterocycles"),
    ("NumAromaticCarbocycles", "rdMolDescriptors", "CalcNumAromaticCarbocycles"),
    ("NumAliphaticHeterocycles", "rdMolDescriptors", "CalcNumAliphaticHeterocycles"),
    ("FractionCSP3", "rdMolDescriptors", "CalcFractionCSP3"),
    ("NumAmideBonds", "rdMolDescriptors", "CalcNumAmideBonds"),
    ("NumSpiroAtoms", "rdMolDescriptors", "CalcNumSpiroAtoms"),
    ("NumBridgeheadAtoms", "rdMolDescriptors", "CalcNumBridgeheadAtoms"),
    ("NumAtomStereoCenters", "rdMolDescriptors", "CalcNumAtomStereoCenters"),
    ("Chi0v", "rdMolDescriptors", "CalcChi0v"),
    ("Chi1v", "rdMolDescriptors", "CalcChi1v"),
    ("Kappa1", "rdMolDescriptors", "CalcKappa1"),
    ("HallKierAlpha", "rdMolDescriptors", "CalcHallKierAlpha"),
)
ELEMENTS = (("C", 6), ("N", 7), ("O", 8), ("S", 16), ("F", 9), ("Cl", 17), ("Br", 35))
_ATOM_PASS = ("HeavyAtomCount", "FormalCharge", "NumHs", "NumAromaticAtoms", *(f"Num{e}" for e, _ in ELEMENTS))
NAMES = tuple(name for name, _, _ in _CALCULATORS) + _ATOM_PASS


def _calculators() -> list[Callable]:
    from rdkit.Chem import Crippen, Descriptors, rdMolDescriptors

    modules = {"Descriptors": Descriptors, "Crippen": Crippen, "rdMolDescriptors": rdMolDescriptors}
    return [getattr(modules[module], function) for _, module, function in _CALCULATORS]


def _atom_pass(mol) -> list[float]:
    """Heavy atoms, the formal charge, hydrogens, aromatic atoms and each element's count, in one pass."""
    counts = dict.fromkeys((number for _, number in ELEMENTS), 0)
    charge = hydrogens = aromatic = 0
    for atom in mol.GetAtoms():
        number = atom.GetAtomicNum()
        if number in counts:
            counts[number] += 1
        charge += atom.GetFormalCharge()
        hydrogens += atom.GetTotalNumHs()
        aromatic += atom.GetIsAromatic()
    return [mol.GetNumHeavyAtoms(), charge, hydrogens, aromatic, *counts.values()]


def compute_descriptors(smiles: Sequence[str]) -> np.ndarray:
    """``(molecules, len(NAMES))`` float32, in order; a row RDKit cannot parse is NaN, and so is a
    value RDKit cannot compute (an error, or a value float32 cannot hold)."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")  # unparsable molecules are counted by ddpx, once
    calculators = _calculators()
    rows = np.full((len(smiles), len(NAMES)), np.nan, dtype=np.float32)
    for i, text in enumerate(smiles):
        mol = Chem.MolFromSmiles(text)
        if mol is None:
            continue
        values = []
        for calculate in calculators:
            try:
                values.append(float(calculate(mol)))
            except (RuntimeError, ValueError, ZeroDivisionError):
                values.append(float("nan"))
        values.extend(_atom_pass(mol))
        with np.errstate(all="ignore"):
            row = np.asarray(values, dtype=np.float64)
            rows[i] = np.where(np.abs(row) < np.finfo(np.float32).max, row, np.nan)
    return rows
