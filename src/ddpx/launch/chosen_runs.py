"""A set chosen in a study's folder stands on the runs it was chosen on.

A set's choice is made once. Where the same study, with the same code, is started again after a
recipe file or a data file of a chosen set changed, that set's runs resolve to other keys: run again,
they would replace the runs its choice and held-out values were read from in the folder's
``runs.jsonl`` (its table would lose them), and the choice would not be made again. So that is a
clear error before anything starts. A run of a chosen set that never finished (a failed run, where
``--choose-with-failures`` chose without it) is not a change: it runs again as before.
"""

from __future__ import annotations

from typing import Any

from ddpx.contract.errors import UserError


def refuse_changed_runs(spec: Any, folder: Any, trials: list[Any], chosen: dict[str, Any]) -> None:
    """Stop before launch where a chosen set's finished run resolves to another key now."""
    before = {(r.set, r.candidate, r.seed): r.key for r in folder.recorded_runs()}
    changed = [
        t
        for t in trials
        if t.set_name in chosen and t.reused is None and before.get((t.set_name, t.candidate, t.seed), t.key) != t.key
    ]
    if not changed:
        return
    names = ", ".join(dict.fromkeys(t.set_name for t in changed))
    raise UserError(
        f"set(s) {names} of study '{spec.name}' were chosen on runs whose recipe or data differ now "
        f"({len(changed)} run(s), the first {changed[0].label}): a set's choice is made once, on its own runs, "
        "so they are not run again. Restore the recipe files and data they were chosen with, or start the "
        "study afresh in another folder (--run-dir)."
    )
