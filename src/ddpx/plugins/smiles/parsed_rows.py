"""What every model family shares: molecules RDKit cannot parse have no graph and no features,
so they leave their split (counted and logged once) for the graph and features models and for the
SMILES model alike, a split left with none is an error, and a SMILES given to predict that RDKit
cannot parse is named."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ddpx.api import UserError
from ddpx.plugins.smiles.csv_table import line_list

LEFT_OUT = (
    "every model family leaves them out (a graph or features model has no input for them), so two "
    "families on one file train on the same molecules."
)
SPLIT_NAMES = {"train": "training", "dev": "dev", "heldout": "held-out"}


def parsed_splits(
    splits: dict[str, Sequence[int]],
    labels: dict[str, list],
    parsed: Sequence[bool],
    source: str,
    log: Callable[[str], None],
    *,
    empty: str,
    skipped: str = LEFT_OUT,
    lines: Sequence[int] | None = None,
) -> dict[str, tuple[list[int], list]]:
    """Each split's rows RDKit can parse, with their labels. ``empty`` ends the error for a split
    left with none; ``skipped`` ends the line logged when some were left out, which names their
    lines of the file given each row's ``lines``."""
    kept, dropped, unparsed = {}, {}, []
    for name in ("train", "dev", "heldout"):
        rows = list(splits[name])
        keep = [k for k, row in enumerate(rows) if parsed[row]]
        dropped[name] = len(rows) - len(keep)
        unparsed += [row for row in rows if not parsed[row]]
        if not keep:
            raise UserError(
                f"{source}: none of the {len(rows)} molecule(s) of the {SPLIT_NAMES[name]} split can be read "
                f"by RDKit, {empty} Fix the SMILES, or use a file with more molecules RDKit can read."
            )
        kept[name] = ([rows[k] for k in keep], [labels[name][k] for k in keep])
    if any(dropped.values()):
        where = ", ".join(f"{SPLIT_NAMES[name]} {count}" for name, count in dropped.items())
        at = f" at line {line_list(sorted(lines[row] for row in unparsed))}" if lines is not None else ""
        log(f"skipped {sum(dropped.values())} molecule(s) RDKit cannot parse ({where}){at}: {skipped}")
    return kept


def refuse_unparsed(smiles: Sequence[str], parsed: Sequence[bool], why: str) -> None:
    """A :class:`UserError` naming the first SMILES RDKit cannot parse, if any; ``why`` ends it."""
    unparsed = [s for s, ok in zip(smiles, parsed) if not ok]
    if unparsed:
        more = f" (and {len(unparsed) - 1} more)" if len(unparsed) > 1 else ""
        raise UserError(f"RDKit cannot parse the SMILES {unparsed[0]!r}{more}, {why} Fix or remove it.")


def model_device(model: torch.nn.Module) -> torch.device:
    parameter = next(model.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")
