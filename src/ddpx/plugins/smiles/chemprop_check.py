"""Optional Chemprop support (``pip install 'ddpx[chem]'``, Python 3.11 or newer): the molecular
graphs and the ``dmpnn`` model are built from Chemprop's own featurizer and modules.

:func:`require_chemprop` checks, before launch, that Chemprop can be imported, without importing
it (importing Chemprop imports Lightning: several seconds); :func:`import_chemprop` imports it on
a rank, with the same message when it is missing.
"""

from __future__ import annotations

import importlib.util
import sys

MINIMUM = (2, 3)


def _missing_message(what: str, reason: str) -> str:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    needs = (
        ("; Chemprop needs Python 3.11 or newer, and this is Python " + python) if sys.version_info < (3, 11) else ""
    )
    return (
        f"{what} needs Chemprop {'.'.join(map(str, MINIMUM))} or newer, {reason}{needs}. Install it with "
        "`pip install 'ddpx[chem]'`, or use a model that reads SMILES tokens (model.name=smiles_rnn)."
    )


def _missing_system_library(what: str, exc: ImportError) -> str:
    library = str(exc).split(":")[0]
    return (
        f"{what} needs Chemprop, which is installed but does not import: this system lacks the library "
        f"{library}. RDKit's drawing module, which Chemprop imports, needs the X11 client libraries even "
        "with no display: install them (on Debian and Ubuntu `apt-get install libxrender1 libxext6 libx11-6`), "
        "or use a model that reads SMILES tokens (model.name=smiles_rnn)."
    )


def _version_tuple(text: str) -> tuple[int, ...]:
    numbers = []
    for part in text.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        numbers.append(int(digits or 0))
    return tuple(numbers)


def require_chemprop(what: str) -> None:
    """Raise a :class:`~ddpx.api.UserError` naming the extra when Chemprop (or RDKit, which it
    needs) is not installed, or is older than 2.3; imports neither."""
    from ddpx.api import UserError

    if importlib.util.find_spec("chemprop") is None:
        raise UserError(_missing_message(what, "which is not installed"))
    if importlib.util.find_spec("rdkit") is None:
        raise UserError(_missing_message(what, "and RDKit, which Chemprop needs, is not installed"))
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("chemprop")
    except PackageNotFoundError:  # importable without metadata (a source tree): let the import decide
        return
    if _version_tuple(found) < MINIMUM:
        raise UserError(_missing_message(what, f"and Chemprop {found} is installed"))


def import_chemprop(what: str):
    """Import Chemprop (and silence RDKit's per-molecule parse errors: ddpx counts them), or raise
    the same :class:`~ddpx.api.UserError` as :func:`require_chemprop`."""
    require_chemprop(what)
    try:
        import chemprop
    except ImportError as exc:
        from ddpx.api import UserError

        if "cannot open shared object file" in str(exc):  # installed, but the system lacks a library
            raise UserError(_missing_system_library(what, exc)) from None
        raise UserError(_missing_message(what, f"which does not import ({exc})")) from None
    from rdkit import RDLogger

    RDLogger.DisableLog("rdApp.*")
    return chemprop
