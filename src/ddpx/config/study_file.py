"""A study file: the sets, the candidates per set, the seeds and the rule, declared before anything runs.

A study is TOML::

    name = "moleculenet"
    seeds = [0, 1, 2, 3, 4]          # the default
    rule = "best_mean_dev"           # the default: the best mean dev metric over the seeds,
                                     # ties to the candidate listed first (list the simplest first)
    overrides = ["dataset.split=scaffold"]   # every run of every set (optional)
    ensembles = ["seeds"]            # the default: reported beside the chosen candidate's own models,
                                     # never instead of them ("families" adds the candidates together)

    [sets.bbbp]
    data = "data/BBBP.csv"           # dataset.path of every candidate (relative to this file)
    overrides = ["train.max_epochs=30"]      # every candidate of the set (optional)
    published = { "D-MPNN" = 0.913 }         # rows to compare against (optional)
    ensembles = ["seeds", "families"]        # this set's ensembles (optional; the study's by default)

    [[sets.bbbp.candidates]]
    recipe = "bbbp_dmpnn"                    # a recipe name or a path (relative to this file)
    name = "graph"                           # optional; the recipe's name by default
    overrides = ["model.depth=4"]            # optional

    [[sets.bbbp.candidates]]
    recipe = "bbbp_dmpnn"
    name = "scratch"
    baseline = true                          # optional: runs every seed, is never chosen, and the
                                             # chosen candidate is compared with it seed by seed

A set has at most one baseline, never its only candidate: the rule chooses among the others, and
the report compares the chosen one with it on held-out values (chosen − baseline, seed by seed).

A file's digest names its study: changing the file after a choice was made starts a new study.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ddpx.config.values import parse_override
from ddpx.contract.errors import UserError, did_you_mean
from ddpx.contract.names import check_path_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

RULES = {"best_mean_dev": "the best mean dev metric over the seeds; ties to the candidate listed first"}
ENSEMBLES = {
    "seeds": "the chosen candidate's models of every seed averaged together",
    "families": "every candidate's model of one seed averaged together, seed by seed",
}
DEFAULT_ENSEMBLES = ("seeds",)
TOP_KEYS = {"name", "description", "seeds", "rule", "overrides", "ensembles", "sets"}
SET_KEYS = {"data", "overrides", "published", "ensembles", "candidates"}
CANDIDATE_KEYS = {"recipe", "name", "overrides", "baseline"}
EXAMPLE = '`[[sets.NAME.candidates]]` with `recipe = "bbbp_dmpnn"`'


@dataclass(frozen=True)
class Candidate:
    name: str
    recipe: str  # a registered recipe's name, or a path made absolute
    overrides: tuple[str, ...] = ()
    baseline: bool = False  # run like any candidate, never chosen: the chosen one is compared with it


@dataclass(frozen=True)
class StudySet:
    name: str
    candidates: tuple[Candidate, ...]
    data: str = ""  # dataset.path, made absolute ("" leaves the recipe's own)
    overrides: tuple[str, ...] = ()
    published: dict[str, float] = field(default_factory=dict)
    ensembles: tuple[str, ...] = DEFAULT_ENSEMBLES  # reported beside the chosen candidate's own models

    @property
    def baseline(self) -> str | None:
        """The name of the set's baseline candidate, if it declares one."""
        return next((c.name for c in self.candidates if c.baseline), None)

    @property
    def contenders(self) -> list[str]:
        """The names of the candidates the rule chooses among: every one but the baseline."""
        return [c.name for c in self.candidates if not c.baseline]

    def overrides_of(self, candidate: Candidate, seed: int) -> list[str]:
        """Every ``KEY=VALUE`` of one run: the study's and the set's, the candidate's, the data, the seed
        (later wins)."""
        data = [f"dataset.path={self.data}"] if self.data else []
        return [*self.overrides, *candidate.overrides, *data, f"train.seed={seed}"]


@dataclass(frozen=True)
class StudySpec:
    name: str
    path: Path
    digest: str  # sha256 of the file's bytes
    seeds: tuple[int, ...]
    rule: str
    sets: tuple[StudySet, ...]
    text: str = ""
    description: str = ""


def read_study(path: str | Path) -> StudySpec:
    """Read and check a study file; every mistake is one clear error before anything starts."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise UserError(f"study file '{path}' does not exist. A study is a TOML file: see docs/studies.md.") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"cannot read study file '{path}': {exc}. A study is a UTF-8 TOML file.") from None
    where = f"study file '{path}'"
    _check_keys(data, TOP_KEYS, where)
    name = _text(data.get("name", path.stem), "name", where)
    check_path_name(name, "name")
    rule = _text(data.get("rule", "best_mean_dev"), "rule", where)
    if rule not in RULES:
        raise UserError(f"{where}: unknown rule '{rule}'.{did_you_mean(rule, RULES)} Rules: {', '.join(RULES)}.")
    sets = data.get("sets")
    if not isinstance(sets, dict) or not sets:
        raise UserError(f"{where} declares no set: add a `[sets.NAME]` table with {EXAMPLE}.")
    every = Every(_overrides(data.get("overrides", []), where), _ensembles(data, DEFAULT_ENSEMBLES, where))
    return StudySpec(
        name=name,
        path=path.resolve(),
        digest=hashlib.sha256(raw).hexdigest(),
        seeds=_seeds(data.get("seeds", [0, 1, 2, 3, 4]), where),
        rule=rule,
        sets=tuple(_study_set(set_name, values, path.parent, where, every) for set_name, values in sets.items()),
        text=raw.decode("utf-8"),
        description=str(data.get("description", "")),
    )


@dataclass(frozen=True)
class Every:
    """What the study's top level gives every set."""

    overrides: tuple[str, ...]
    ensembles: tuple[str, ...]


def _study_set(name: str, values: Any, folder: Path, where: str, every: Every) -> StudySet:
    where = f"{where}, set '{name}'"
    if not isinstance(values, dict):
        raise UserError(f"{where} is not a table: write `[sets.{name}]` with {EXAMPLE}.")
    _check_keys(values, SET_KEYS, where)
    listed = values.get("candidates")
    if not isinstance(listed, list) or not listed:
        raise UserError(f"{where} has no candidate: add {EXAMPLE.replace('NAME', name)}.")
    candidates = tuple(_candidate(item, folder, where) for item in listed)
    names = [c.name for c in candidates]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f'{where} names candidate(s) {", ".join(twice)} twice: give each a `name = "..."` of its own.')
    _check_baseline(candidates, where)
    published = values.get("published", {})
    if not isinstance(published, dict) or not all(isinstance(v, (int, float)) for v in published.values()):
        raise UserError(f'{where}: `published` maps a row\'s label to its number, like {{ "D-MPNN" = 0.913 }}.')
    data = _text(values.get("data", ""), "data", where)
    return StudySet(
        name=name,
        candidates=candidates,
        data=str(_from(folder, data)) if data else "",
        overrides=every.overrides + _overrides(values.get("overrides", []), where),
        published={k: float(v) for k, v in published.items()},
        ensembles=_ensembles(values, every.ensembles, where),
    )


def _candidate(item: Any, folder: Path, where: str) -> Candidate:
    if isinstance(item, str):
        item = {"recipe": item}
    if not isinstance(item, dict) or not isinstance(item.get("recipe"), str) or not item["recipe"]:
        raise UserError(f"{where}: each candidate names its recipe, as {EXAMPLE}.")
    _check_keys(item, CANDIDATE_KEYS, f"{where}, candidate '{item['recipe']}'")
    recipe = item["recipe"]
    if recipe.endswith(".toml") or "/" in recipe:
        recipe = str(_from(folder, recipe))
    name = _text(item.get("name", Path(recipe).stem if recipe.endswith(".toml") else recipe), "name", where)
    check_path_name(name, "candidate name")
    baseline = item.get("baseline", False)
    if not isinstance(baseline, bool):
        raise UserError(f"{where}, candidate '{name}': `baseline` is true or false; write baseline = true.")
    return Candidate(
        name=name, recipe=recipe, overrides=_overrides(item.get("overrides", []), where), baseline=baseline
    )


def _check_baseline(candidates: tuple[Candidate, ...], where: str) -> None:
    """At most one baseline, and never the set's only candidate: the rule chooses among the others."""
    baselines = [c.name for c in candidates if c.baseline]
    if len(baselines) > 1:
        raise UserError(
            f"{where} has {len(baselines)} baselines ({', '.join(baselines)}): a set has at most one, the "
            "candidate the chosen one is compared with; write `baseline = true` on one candidate only."
        )
    if baselines and len(candidates) == 1:
        raise UserError(
            f"{where}: its only candidate '{baselines[0]}' is its baseline, which is never chosen: add the "
            "candidates the rule chooses among, or remove `baseline = true`."
        )


def _from(folder: Path, text: str) -> Path:
    """A path as the file writes it: ``~`` and ``$VARIABLES`` expanded, relative to the file's folder."""
    path = Path(os.path.expandvars(os.path.expanduser(text)))
    return path if path.is_absolute() else (folder / path).resolve()


def _overrides(values: Any, where: str) -> tuple[str, ...]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise UserError(f'{where}: `overrides` is a list of "KEY=VALUE" strings, like ["train.lr=0.001"].')
    for text in values:
        parse_override(text)
    return tuple(values)


def _ensembles(values: dict[str, Any], default: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The ``ensembles`` a table declares (``default`` where it declares none)."""
    words = values.get("ensembles", list(default))
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words) or len(set(words)) != len(words):
        raise UserError(f'{where}: `ensembles` is a list of distinct words, like ["seeds", "families"].')
    for word in words:
        if word not in ENSEMBLES:
            known = "; ".join(f"{name}: {what}" for name, what in ENSEMBLES.items())
            raise UserError(
                f"{where}: unknown ensemble '{word}' in `ensembles`.{did_you_mean(word, ENSEMBLES)} "
                f"An ensemble is reported beside the chosen candidate's own models, never instead of them; "
                f'the ensembles are {known}. Write ensembles = ["seeds"] (the default) or ["seeds", "families"].'
            )
    return tuple(words)


def _seeds(values: Any, where: str) -> tuple[int, ...]:
    good = isinstance(values, list) and values and all(isinstance(v, int) and v >= 0 for v in values)
    if not good or len(set(values)) != len(values):
        raise UserError(f"{where}: `seeds` is a list of distinct whole numbers, like [0, 1, 2, 3, 4].")
    return tuple(values)


def _text(value: Any, key: str, where: str) -> str:
    if not isinstance(value, str):
        raise UserError(f'{where}: `{key}` is text; write {key} = "...".')
    return value


def _check_keys(values: dict[str, Any], known: set[str], where: str) -> None:
    for key in values:
        if key not in known:
            raise UserError(
                f"{where} has an unknown key '{key}'.{did_you_mean(key, known)} Known keys: {', '.join(sorted(known))}."
            )
