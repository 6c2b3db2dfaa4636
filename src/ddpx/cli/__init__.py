"""The ``ddpx`` command line. Each module adds its commands to the group in :mod:`ddpx.cli.app`:

- ``run_commands``: ``ddpx recipe`` and ``ddpx sweep`` (they train);
- ``recipe_commands``: ``ddpx recipes``, ``ddpx show``, ``ddpx cp``;
- ``predict_command``: ``ddpx predict`` (a trained model's predictions for a CSV);
- ``upload_command``: ``ddpx upload`` (a run folder into MLflow after the fact);
- ``plugin_commands``: ``ddpx plugins`` and ``ddpx plugins check``;
- ``study_commands``: ``ddpx study run`` and ``ddpx study report`` (declared studies, chosen on dev).

Plugins add the others through the ``register_commands`` hook: ``ddpx runs`` (the MLflow tracker
plugin), ``ddpx bench`` (the backends plugin), and any third-party plugin's.
"""

from __future__ import annotations

import sys

from ddpx.cli import (  # noqa: F401 - each module adds its commands
    plugin_commands,
    predict_command,
    recipe_commands,
    run_commands,
    study_commands,
    upload_command,
)
from ddpx.cli.app import cli

__all__ = ["cli", "main"]


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="ddpx")


if __name__ == "__main__":
    main(sys.argv[1:])
