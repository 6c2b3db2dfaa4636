"""Test plugin: implements a hook the contract does not have (a typo of register_tasks)."""

from ddpx import hookimpl


@hookimpl
def register_task(register):
    pass
