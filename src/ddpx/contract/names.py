"""What a name that becomes a path may be: the one check for every such name (a recipe's name
names its run folders)."""

from __future__ import annotations

from ddpx.contract.errors import UserError

MAX_NAME = 100


def check_path_name(value: str, key: str) -> str:
    """``value`` if it can name one folder inside another; a clear error otherwise."""
    problem = None
    if not value.strip():
        problem = "it is empty"
    elif len(value) > MAX_NAME:
        problem = f"it is {len(value)} characters long (at most {MAX_NAME})"
    elif any(sep in value for sep in ("/", "\\")) or value.startswith("."):
        problem = "a path separator or a leading '.' would put the run folder somewhere else"
    elif any(ord(c) < 32 or ord(c) == 127 for c in value):
        problem = "it holds a control character"
    if problem:
        raise UserError(
            f"'{key}' cannot be {value[:60]!r}: {problem}. Use a plain name such as "
            f"{key}=my_experiment (letters, digits, '_', '-' and '.')."
        )
    return value
