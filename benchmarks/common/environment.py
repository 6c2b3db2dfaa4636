"""Where the repository is, and the environment a ddpx job needs to load a benchmark's probe plugin.

Every entry script is run by its path (``python benchmarks/<name>/run.py``) and first puts the
repository root on ``sys.path``, so that every module of ``benchmarks`` imports by its full name
(``benchmarks.common.environment``); a probe plugin is loaded in every rank the same way, through
``DDPX_PLUGINS=benchmarks.<name>.probe`` with the root on ``PYTHONPATH`` (:func:`plugin_env`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
PLAIN_DDP_MLP = Path(__file__).resolve().parent / "plain_ddp_mlp.py"


def plugin_env(*modules: str) -> dict[str, str]:
    """``DDPX_PLUGINS`` naming ``modules`` and ``PYTHONPATH`` with the repository root first: the
    variables a ddpx job's environment needs so that every rank loads those plugins."""
    return {
        "DDPX_PLUGINS": ",".join(modules),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }


def use_test_file_writers() -> None:
    """Make the small real-format file writers the tests use importable (``image_files``,
    ``smiles_files``)."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
