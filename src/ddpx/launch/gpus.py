"""How many GPUs this machine offers, answered without importing torch where it has none.

The parent process checks a run before it starts any rank, and a torch import costs it a second
or two. Every CUDA GPU is driven through the NVIDIA driver's ``libcuda.so.1`` (also under WSL
and on Jetson); ROCm builds of torch drive AMD GPUs through ``/dev/kfd``. A machine with
neither has no GPU torch could use, so the answer is 0 at once; anywhere else torch counts
(honouring ``CUDA_VISIBLE_DEVICES`` and the like).
"""

from __future__ import annotations

import ctypes
import os
import sys


def gpu_driver_present() -> bool:
    """True when an NVIDIA driver library can be loaded or an AMD GPU device node exists."""
    if not sys.platform.startswith("linux"):
        return True  # no cheap answer elsewhere: let torch say
    if os.path.exists("/dev/kfd"):
        return True
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def local_gpu_count() -> int:
    """The number of GPUs torch can use on this machine (0 without importing torch when no
    GPU driver is present)."""
    if "torch" not in sys.modules and not gpu_driver_present():
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0
