"""A study's ensembles per set: outcomes of their own, reported beside the chosen candidate's own
models and never instead of them (the study file's ``ensembles``).

- ``seeds``, "its seeds together": the chosen candidate's models of every seed as one ensemble;
  one held-out value.
- ``families``, "families together": every candidate's model of one seed as one ensemble, an
  ensemble per seed (nothing chosen, so no held-out value chooses either); its held-out mean ± sd
  over the seeds.

A member's answers are read through the recorded choice
(:meth:`~ddpx.records.study_records.RecordedChoice.heldout_answers`) and must give its run's own
held-out value (:mod:`ddpx.records.seed_ensemble`). Where they cannot, the outcome's value is
``None`` and its ``reason`` says why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ddpx.records.heldout_answers import NoValue
from ddpx.records.seed_ensemble import Member, together
from ddpx.records.study_records import RecordedChoice, RunRecord

Values = Mapping[tuple[str, int], "float | None"]  # a run's held-out value by (candidate, seed)


def set_ensembles(
    recorded: RecordedChoice,
    declared: Sequence[str],
    runs: Sequence[RunRecord],
    values: Values,
    chosen: str | None,
    seeds: Sequence[int],
) -> dict[str, dict[str, Any]]:
    """The declared ensembles of one set's ``runs``: ``{"seeds": {"value", "reason"}, "families":
    {"values", "reason"}}`` (its seeds together only where a candidate was chosen)."""
    outcomes: dict[str, dict[str, Any]] = {}
    if "seeds" in declared and chosen:
        outcomes["seeds"] = _outcome(lambda: seeds_together(recorded, runs, values, chosen), "value")
    if "families" in declared:
        outcomes["families"] = _outcome(lambda: families_together(recorded, runs, values, seeds), "values")
    return outcomes


def seeds_together(recorded: RecordedChoice, runs: Sequence[RunRecord], values: Values, chosen: str) -> float:
    own = sorted((r for r in runs if r.candidate == chosen), key=lambda r: r.seed)
    return together([_member(recorded, r, values) for r in own], own[0].metric)


def families_together(
    recorded: RecordedChoice, runs: Sequence[RunRecord], values: Values, seeds: Sequence[int]
) -> list[float]:
    """One value per seed: every candidate's model of the seed together."""
    candidates = list(dict.fromkeys(r.candidate for r in runs))
    by_run = {(r.candidate, r.seed): r for r in runs}
    found = []
    for seed in seeds:
        missing = [c for c in candidates if (c, seed) not in by_run]
        if missing:
            raise NoValue(f"{', '.join(missing)} finished no run of seed {seed}")
        members = [_member(recorded, by_run[c, seed], values) for c in candidates]
        found.append(together(members, runs[0].metric))
    return found


def _member(recorded: RecordedChoice, record: RunRecord, values: Values) -> Member:
    label = f"{record.candidate} seed {record.seed}"
    value = values.get((record.candidate, record.seed))
    try:
        if value is None:
            raise NoValue(f"its run has no held-out {record.metric}")
        return Member(label, recorded.heldout_answers(record), value)
    except NoValue as exc:
        raise NoValue(f"{label}: {exc}") from None


def _outcome(compute: Callable[[], Any], key: str) -> dict[str, Any]:
    try:
        return {key: compute(), "reason": ""}
    except NoValue as exc:
        return {key: None, "reason": str(exc)}
