"""The pluggy markers of the ``ddpx`` project.

Plugins decorate their hook implementations with :data:`hookimpl` (re-exported as
``ddpx.hookimpl``); :mod:`ddpx.contract.hookspecs` marks the specifications with :data:`hookspec`.
"""

import pluggy

PROJECT_NAME = "ddpx"
ENTRY_POINT_GROUP = "ddpx"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
