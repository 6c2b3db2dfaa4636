"""A study's records: its folder, each run's key, the finished runs, and the choice.

Layout (``ddpx-runs/studies/<name>-<file digest>-<code digest>/``)::

    study.toml      the study file as it was read
    study.json      the file's and the code's digests, the commit, the machine, the parent run
    runs.jsonl      one line per finished run: set, candidate, seed, key, run folder, dev metric
    choice.json     the candidate chosen per set, with the dev evidence (written before any
                    held-out value is read)
    events.jsonl    what the study did, in order (choice recorded, held-out values and predictions read)

``ddpx-runs/studies/finished.jsonl`` indexes every finished run of every study by its key: a
run's resolved recipe, its data's digest and the code's version. A study reuses a run whose key
matches and never one of other code.

Held-out values are read only through :meth:`RecordedChoice.heldout` (and a run's held-out
predictions through :meth:`RecordedChoice.heldout_answers`), which exists only once the choice was
written and read back from disk.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import ddpx
from ddpx.contract.records import RunSummary
from ddpx.contract.run_dir import RunDir
from ddpx.records.dataset_record import file_digest
from ddpx.records.heldout_answers import PREDICTIONS, HeldoutAnswers, read_answers
from ddpx.records.study_recipes import without_changes
from ddpx.records.tracking import git_commit


def code_version() -> dict[str, str]:
    """The running code: a digest of ddpx's own source files, and the git commit where there is one
    (``+changes`` when the package's files differ from it)."""
    package = Path(ddpx.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    version = {"code_digest": digest.hexdigest(), "version": ddpx.__version__}
    commit = git_commit(package)
    if commit:
        try:
            dirty = subprocess.run(
                ["git", "-C", str(package), "status", "--porcelain", "--", "."],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            dirty = ""
        version["commit"] = commit + ("+changes" if dirty else "")
    return version


def data_digest(path: str) -> str:
    """The digest of a data file (of every file of a folder, in order), "" for none."""
    if not path:
        return ""
    target = Path(path)
    if not target.is_dir():
        return file_digest(target) if target.is_file() else ""
    files = sorted(p for p in target.rglob("*") if p.is_file())
    return hashlib.sha256("\n".join(file_digest(f) for f in files).encode()).hexdigest()


def run_key(resolved_toml: str, data_digest: str, code_digest: str) -> str:
    """What makes two runs the same run: the resolved recipe, the data, the code."""
    return hashlib.sha256("\0".join([resolved_toml, data_digest, code_digest]).encode()).hexdigest()


@dataclass(frozen=True)
class RunRecord:
    """A finished run as the study chooses on it: its dev evidence, never its held-out values."""

    set: str
    candidate: str
    seed: int
    key: str
    run_dir: str
    run_id: str | None
    metric: str
    greater_is_better: bool
    dev: float | None
    best_epoch: int
    epochs_run: int

    @classmethod
    def of(cls, set_name: str, candidate: str, seed: int, key: str, summary: RunSummary) -> RunRecord:
        return cls(
            set=set_name,
            candidate=candidate,
            seed=seed,
            key=key,
            run_dir=summary.run_dir,
            run_id=summary.run_id,
            metric=summary.metric,
            greater_is_better=summary.greater_is_better,
            dev=summary.best_dev,
            best_epoch=summary.best_epoch,
            epochs_run=summary.epochs_run,
        )


class StudyDir:
    """One study's folder, and the index of finished runs beside it."""

    def __init__(self, root: Path, name: str, study_digest: str, code_digest: str):
        self.root = root
        self.path = root / f"{name}-{study_digest[:10]}-{code_digest[:10]}"

    @classmethod
    def at(cls, path: Path) -> StudyDir:
        """The study folder at ``path`` (one found on disk)."""
        folder = cls(path.parent, "", "", "")
        folder.path = path
        return folder

    @property
    def index(self) -> Path:
        return self.root / "finished.jsonl"

    def create(self, text: str, info: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        (self.path / "study.toml").write_text(text, encoding="utf-8")
        known = self.info()
        (self.path / "study.json").write_text(json.dumps({**info, **known}, indent=2), encoding="utf-8")

    def info(self) -> dict[str, Any]:
        path = self.path / "study.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def note(self, **values: Any) -> None:
        """Add to study.json (the parent run's id, say)."""
        path = self.path / "study.json"
        path.write_text(json.dumps({**self.info(), **values}, indent=2), encoding="utf-8")

    def event(self, what: str, **details: Any) -> None:
        with (self.path / "events.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"time": time.time(), "event": what, **details}) + "\n")

    def events(self) -> list[dict[str, Any]]:
        return _read_lines(self.path / "events.jsonl")

    def finished(self) -> dict[str, RunRecord]:
        """Every finished run of any study, by key, whose run folder still holds its summary."""
        records = {}
        for values in _read_lines(self.index):
            record = RunRecord(**values)
            if (Path(record.run_dir) / "summary.json").is_file():
                records[record.key] = record
        return records

    def started(self, key: str, run_dir: Path) -> None:
        """Note the folder a run of ``key`` begins in, so that a study stopped mid-run continues it."""
        with (self.root / "started.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"key": key, "run_dir": str(run_dir), "time": time.time()}) + "\n")

    def interrupted(self) -> dict[str, Path]:
        """By key, the latest folder a run began in that holds a checkpoint and no summary: a run cut off
        (Ctrl-C, a crash, the machine's end of day) that the same study goes on with."""
        found = {}
        for values in _read_lines(self.root / "started.jsonl"):
            folder = RunDir(Path(values["run_dir"]))
            if folder.last_checkpoint.is_file() and not folder.summary_file.is_file():
                found[values["key"]] = folder.path
            else:
                found.pop(values["key"], None)
        return found

    def recorded_runs(self) -> list[RunRecord]:
        """The finished runs this study holds (``runs.jsonl``; none before it first starts)."""
        return [RunRecord(**values) for values in _read_lines(self.path / "runs.jsonl")]

    def start_runs(self, reused: list[RunRecord]) -> None:
        """This study's runs.jsonl begins with the finished runs it reuses."""
        lines = "".join(json.dumps(asdict(record)) + "\n" for record in reused)
        (self.path / "runs.jsonl").write_text(lines, encoding="utf-8")

    def add(self, record: RunRecord) -> None:
        for path in (self.index, self.path / "runs.jsonl"):
            with path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(asdict(record)) + "\n")

    def keep_sets(self, kept: dict[str, dict[str, Any]]) -> None:
        """Write the sets kept from an earlier export (``--from-records``), as that export holds them (what
        differs since is worked out again each time: ``study_recipes.py``)."""
        self._write_table("kept.json", {name: without_changes(entry) for name, entry in kept.items()})

    def kept_sets(self) -> dict[str, dict[str, Any]]:
        """The sets this study keeps from an earlier export, by name (none where it keeps none)."""
        return self._table("kept.json")

    def keep_recipes(self, recipes: dict[str, dict[str, Any]]) -> None:
        """Write each set's candidates' resolved settings, which its export records (``study_recipes.py``)."""
        self._write_table("recipes.json", recipes)

    def recipes(self) -> dict[str, dict[str, Any]]:
        """Each set's candidates' resolved settings, by set and candidate (none for a study made before)."""
        return self._table("recipes.json")

    def _write_table(self, name: str, table: dict[str, Any]) -> None:
        if table:
            (self.path / name).write_text(json.dumps(table, indent=1, sort_keys=True), encoding="utf-8")

    def _table(self, name: str) -> dict[str, Any]:
        path = self.path / name
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}

    def record_choice(self, choice: dict[str, Any], now: list[str] | None = None) -> RecordedChoice:
        """Write the choice of every set chosen so far (``now``: those chosen this time; default all)."""
        path, tmp = self.path / "choice.json", self.path / ".choice.json.tmp"
        tmp.write_text(json.dumps(choice, indent=2, sort_keys=True), encoding="utf-8")
        tmp.replace(path)  # a report read beside a running study sees the old choice or the new one
        self.event("choice recorded", sets=sorted(choice) if now is None else now)
        return RecordedChoice.read(self)


def choose(records: list[RunRecord], candidates: list[str], seeds: tuple[int, ...]) -> dict[str, Any]:
    """One set's choice by the rule ``best_mean_dev``: the candidate whose runs of every seed finished
    with the best mean dev metric; ties to the candidate listed first. Only dev values are read."""
    by_candidate = {name: {r.seed: r for r in records if r.candidate == name} for name in candidates}
    evidence, eligible = {}, []
    for name, runs in by_candidate.items():
        devs = [runs[s].dev for s in seeds if s in runs and runs[s].dev is not None]
        complete = len(devs) == len(seeds)
        evidence[name] = {
            "mean_dev": statistics.fmean(devs) if devs else None,
            "sd_dev": statistics.stdev(devs) if len(devs) > 1 else 0.0,
            "dev": devs,
            "complete": complete,
        }
        if complete:
            eligible.append(name)
    if not eligible:
        return {"chosen": None, "evidence": evidence, "reason": "no candidate finished every seed"}
    higher = records[0].greater_is_better
    best = eligible[0]
    for name in eligible[1:]:  # strictly better only: ties stay with the earlier candidate
        mean, best_mean = evidence[name]["mean_dev"], evidence[best]["mean_dev"]
        if (mean > best_mean) if higher else (mean < best_mean):
            best = name
    return {"chosen": best, "evidence": evidence, "metric": records[0].metric, "greater_is_better": higher}


@dataclass(frozen=True)
class RecordedChoice:
    """The choice as written to disk; the only way to the held-out values of a study's runs."""

    study: StudyDir
    choice: dict[str, Any]

    @classmethod
    def read(cls, study: StudyDir) -> RecordedChoice:
        return cls(study, json.loads((study.path / "choice.json").read_text(encoding="utf-8")))

    def heldout(self, record: RunRecord) -> dict[str, float]:
        """A run's held-out metrics, read from its folder once the choice for its set is recorded."""
        self._check_recorded(record)
        summary = RunSummary.read(Path(record.run_dir) / "summary.json")
        self.study.event("heldout read", set=record.set, candidate=record.candidate, seed=record.seed)
        return {**summary.heldout, **summary.by_label}

    def heldout_answers(self, record: RunRecord) -> HeldoutAnswers:
        """A run's held-out answers (its predictions file), read once the choice for its set is
        recorded; :class:`~ddpx.records.heldout_answers.NoValue` where the file is missing or unreadable."""
        self._check_recorded(record)
        self.study.event("heldout predictions read", set=record.set, candidate=record.candidate, seed=record.seed)
        return read_answers(Path(record.run_dir) / PREDICTIONS)

    def _check_recorded(self, record: RunRecord) -> None:
        if record.set not in self.choice:
            raise RuntimeError(f"set '{record.set}' has no recorded choice: held-out values stay unread")


def _read_lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
