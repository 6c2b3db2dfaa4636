"""Optional RDKit support (``pip install 'ddpx[chem]'``): canonical SMILES and scaffolds."""

from __future__ import annotations

from ddpx.api import UserError


def require_rdkit(feature: str):
    """Import RDKit's Chem module, or explain how to get it for ``feature``."""
    try:
        from rdkit import Chem, RDLogger
    except ImportError:
        raise UserError(
            f"{feature} needs RDKit, which is not installed. Install it with `pip install 'ddpx[chem]'`, "
            "or use the default (dataset.split=random, dataset.canonicalize=false)."
        ) from None
    RDLogger.DisableLog("rdApp.*")  # invalid SMILES are reported by ddpx, once
    return Chem


def canonicalizer():
    """A function mapping a SMILES to RDKit's canonical form, or ``None`` if it does not parse."""
    Chem = require_rdkit("dataset.canonicalize=true")

    def canonical(smiles: str) -> str | None:
        mol = Chem.MolFromSmiles(smiles)
        return Chem.MolToSmiles(mol) if mol is not None else None

    return canonical


def murcko_scaffold(smiles: str) -> str:
    """The Bemis–Murcko scaffold of a molecule ('' for acyclic or unparsable molecules)."""
    require_rdkit("dataset.split=scaffold")
    from rdkit.Chem.Scaffolds import MurckoScaffold

    try:
        return MurckoScaffold.MurckoScaffoldSmiles(smiles=smiles, includeChirality=False)
    except (ValueError, RuntimeError):
        return ""


def rdkit_parses(smiles: list[str]) -> list[bool] | None:
    """Which SMILES RDKit parses (as the graph and features models read them: Chemprop's
    ``make_mol`` is RDKit's ``MolFromSmiles``); ``None`` without RDKit."""
    try:
        Chem = require_rdkit("checking the SMILES")
    except UserError:
        return None
    return [Chem.MolFromSmiles(s) is not None for s in smiles]
