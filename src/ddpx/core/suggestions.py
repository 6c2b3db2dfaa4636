""""Did you mean ...?" for names the user mistyped."""

from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """Return `` Did you mean 'x'?`` for the closest known name, or an empty string."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" Did you mean '{close[0]}'?" if close else ""
