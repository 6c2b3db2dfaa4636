"""Sets a study keeps from an earlier export of itself, so that it goes on from committed records.

A study's runs live on the machine that ran them; its export (``ddpx study report FILE --export``)
is what gets committed. ``ddpx study run FILE --from-records EXPORT`` keeps every set the export
chose exactly as the export holds it (its runs, dev and held-out values, choice and ensembles) and
runs only the sets it did not choose: a long study goes on, on another machine, after the one that
held its runs is gone. Only an export of the same study file (the same bytes: the file's digest)
is accepted, so the sets, candidates, seeds and rule are the ones the kept sets were chosen under.
A kept set names the code its runs were made with, which the table states when it is not the code
of the rest. What a study has kept or chosen stands: a later export adds only the sets it has neither
kept nor chosen (:func:`merged_kept`), since a choice is made once and kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ddpx.contract.errors import UserError
from ddpx.records.study_records import data_digest
from ddpx.records.study_report import DATA_SHA256, FORMAT, KEPT_FROM


def read_kept_sets(path: Path, spec: Any) -> dict[str, dict[str, Any]]:
    """The sets the export at ``path`` chose, by name, each naming its code; a clear error where the
    export is not one of the study file ``spec`` (another file, another format, not an export)."""
    records = _read(path, spec)
    if records.get("format") != FORMAT or not isinstance(records.get("sets"), list):
        raise UserError(
            f"'{path}' is not an export of format {FORMAT} (`ddpx study report {spec.path} --export FILE` "
            "writes one): export the study's records again with this version of ddpx, or leave out --from-records."
        )
    study, entries = records.get("study"), records["sets"]
    if not isinstance(study, dict) or not all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in entries):
        raise UserError(
            f"'{path}' is not a study's exported records: its 'study' or 'sets' entries are not what "
            f"`ddpx study report {spec.path} --export FILE` writes. Give the file --export wrote, unedited."
        )
    if study.get("study.digest") != spec.digest:
        raise UserError(
            f"'{path}' is an export of another study file (sha256 {str(study.get('study.digest'))[:12]}; "
            f"{spec.path} is {spec.digest[:12]}): a set is kept only under the same file, unchanged, so that "
            "its candidates, seeds and rule are the ones it was chosen by. Give the export of this file, "
            "restore the file the export was made from, or leave out --from-records to run every set."
        )
    origin = {"records": path.name, **{k: study[k] for k in ("code.commit", "code.code_digest") if k in study}}
    declared = {s.name: s for s in spec.sets}
    kept = {
        entry["name"]: {**entry, KEPT_FROM: entry.get(KEPT_FROM, origin)}
        for entry in entries
        if entry.get("chosen") and entry["name"] in declared
    }
    for name, entry in kept.items():
        _check_data(path, declared[name], entry)
    return kept


def _check_data(path: Path, study_set: Any, entry: dict[str, Any]) -> None:
    """A kept set's data must be the data its runs read, where the export recorded it (an export made
    before exports held ``data_sha256`` keeps its sets unchecked)."""
    recorded = entry.get(DATA_SHA256)
    if recorded and data_digest(study_set.data) != recorded:
        raise UserError(
            f"set '{study_set.name}' of '{path}' was chosen on other data than {study_set.data or 'its recipe'} "
            f"holds now (sha256 {recorded[:12]} there): a set is kept only with the data its runs read. "
            "Restore that file, or leave out --from-records to run every set on the data as it is."
        )


def merged_kept(earlier: dict[str, Any], export: dict[str, Any], chosen_here: dict[str, Any]) -> dict[str, Any]:
    """The sets a study keeps when given an ``export``: those it kept ``earlier`` stand as they are, and the
    export adds the sets neither kept nor ``chosen_here`` yet (a choice, once made, is kept)."""
    return {**{name: entry for name, entry in export.items() if name not in chosen_here}, **earlier}


def _read(path: Path, spec: Any) -> dict[str, Any]:
    try:
        records = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(
            f"records file '{path}' does not exist; `ddpx study report {spec.path} --export FILE` writes one "
            "from a study that has chosen sets."
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(
            f"'{path}' is not a study's exported records (JSON): {exc}. Give the file --export wrote."
        ) from None
    if not isinstance(records, dict):
        raise UserError(f"'{path}' is not a study's exported records: give the file --export wrote.")
    return records
