"""Real data files for the integration tests, found where a user keeps them: ``$DDPX_DATA_DIR``
(or ddpx's default data folder, ``~/.cache/ddpx/data``) in the layout ddpx itself reads, then the
project's shared data folder beside the checkout (``../shared/data``), which CI has.

A test that needs a file skips with a reason naming every place it looked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ddpx.api import data_root

SHARED_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def first_existing(candidates: list[Path], usable=Path.exists) -> Path | None:
    return next((path for path in candidates if usable(path)), None)


def where_looked(candidates: list[Path]) -> str:
    return " or ".join(str(path) for path in candidates)


def bbbp_candidates() -> list[Path]:
    return [data_root() / "bbbp" / "BBBP.csv", SHARED_DATA / "bbbp" / "BBBP.csv"]


def has_mnist(folder: Path) -> bool:
    """The four IDX files, plain or gzip-compressed."""
    return all((folder / name).is_file() or (folder / f"{name}.gz").is_file() for name in MNIST_FILES)


def mnist_candidates() -> list[Path]:
    return [data_root() / "MNIST" / "raw", SHARED_DATA / "mnist"]


def moleculenet_candidates(folder: str, file: str, shared_file: str) -> list[Path]:
    """ddpx's own layout (``<data>/<folder>/<file>``, as ``dataset.download=true`` leaves it), then the
    shared folder's copy (``moleculenet/<shared_file>``, named as MoleculeNet's page names it)."""
    return [data_root() / folder / file, SHARED_DATA / "moleculenet" / shared_file]


def tox21_candidates() -> list[Path]:
    return moleculenet_candidates("tox21", "tox21.csv.gz", "tox21.csv")


def esol_candidates() -> list[Path]:
    return moleculenet_candidates("esol", "delaney-processed.csv", "ESOL_delaney-processed.csv")


BBBP = first_existing(bbbp_candidates(), Path.is_file)
MNIST = first_existing(mnist_candidates(), has_mnist)
TOX21 = first_existing(tox21_candidates(), Path.is_file)
ESOL = first_existing(esol_candidates(), Path.is_file)

needs_bbbp = pytest.mark.skipif(
    BBBP is None,
    reason=f"no real BBBP file at {where_looked(bbbp_candidates())} (set DDPX_DATA_DIR; CI has ../shared/data)",
)
needs_mnist = pytest.mark.skipif(
    MNIST is None,
    reason=f"no real MNIST files in {where_looked(mnist_candidates())} (set DDPX_DATA_DIR; CI has ../shared/data)",
)
needs_esol = pytest.mark.skipif(
    ESOL is None,
    reason=f"no real ESOL file at {where_looked(esol_candidates())} (set DDPX_DATA_DIR; CI has ../shared/data)",
)
