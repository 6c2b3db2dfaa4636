"""Where a command prints: a rich console as wide as the terminal, or a wide page when piped."""

from __future__ import annotations

import sys
from typing import Any


def console() -> Any:
    """A ``rich.console.Console``: the terminal's own width; a wide page (200 columns) when the
    output goes to a file or a pipe, so a table or a path is never cut in two there."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)
