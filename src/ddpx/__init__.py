"""ddpx: a plugin-based experiment framework for PyTorch DistributedDataParallel training.

Importing ``ddpx`` is cheap: neither torch nor mlflow is imported until a run needs them.
Plugin authors need only :data:`hookimpl` and the specs in :mod:`ddpx.core.components`.
"""

from importlib.metadata import PackageNotFoundError, version

from ddpx.core.markers import hookimpl

try:
    __version__ = version("ddpx")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["hookimpl", "__version__"]
