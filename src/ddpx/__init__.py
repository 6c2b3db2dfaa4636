"""ddpx: a plugin-based experiment framework for PyTorch DistributedDataParallel training.

Importing ``ddpx`` is cheap: neither torch nor mlflow is imported until a run needs them. The
public plugin API is :mod:`ddpx.api`; its names are also reachable here (``ddpx.hookimpl``,
``ddpx.TaskSpec``, ...), loaded on first use.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from ddpx.contract.markers import hookimpl

try:
    __version__ = version("ddpx")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str) -> Any:
    """The names of :mod:`ddpx.api`, imported when first asked for."""
    from ddpx import api

    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'ddpx' has no attribute '{name}'")


__all__ = ["__version__", "hookimpl"]
