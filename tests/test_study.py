"""``ddpx study``: a declared study runs, stops and goes on without rerunning what finished, chooses
on dev and records the choice before any held-out value is read, and its table regenerates from
the exported records alone."""

import csv
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import TEST_PLUGINS, TEST_RECIPES
from mlflow.tracking import MlflowClient

from ddpx.cli.study_report import exported as study_report_records
from ddpx.config.study_file import read_study
from ddpx.contract.errors import UserError
from ddpx.contract.launch_settings import LaunchSettings
from ddpx.records.study_records import RecordedChoice, RunRecord, StudyDir, choose
from ddpx.records.study_report import markdown, read_records, t_interval, verdict

TINY = TEST_RECIPES / "tiny_mlp.toml"
ROOT = Path(__file__).parent.parent
STUDY = f"""\
name = "two_sets"
seeds = [0, 1]

[sets.easy]
overrides = ["train.max_epochs=1", "dataset.class_sep=1.5"]
published = {{ "a paper" = 0.5 }}

[[sets.easy.candidates]]
recipe = "{TINY}"
name = "wide"

[sets.hard]
overrides = ["train.max_epochs=1", "dataset.class_sep=0.5"]
ensembles = ["seeds", "families"]

[[sets.hard.candidates]]
recipe = "{TINY}"
name = "narrow"
overrides = ["model.dim_hidden=16"]

[[sets.hard.candidates]]
recipe = "{TINY}"
name = "wide"
baseline = true
"""


def record(candidate: str, seed: int, dev: float) -> RunRecord:
    return RunRecord("s", candidate, seed, f"{candidate}{seed}", "/nowhere", None, "accuracy", True, dev, 1, 1)


def test_the_rule_takes_the_best_mean_dev_of_complete_candidates_ties_to_the_first():
    runs = [record("a", 0, 0.5), record("a", 1, 1.0), record("b", 0, 0.75), record("b", 1, 0.75)]
    assert choose(runs, ["a", "b"], (0, 1))["chosen"] == "a"  # 0.85 each: the one listed first
    assert choose(runs, ["b", "a"], (0, 1))["chosen"] == "b"
    runs.append(record("c", 0, 0.99))  # one seed missing: not eligible
    choice = choose(runs, ["a", "b", "c"], (0, 1))
    assert choice["chosen"] == "a" and choice["evidence"]["c"]["complete"] is False


def test_the_rule_never_chooses_the_baseline_and_the_choice_names_it():
    from ddpx.config.study_file import Candidate, StudySet
    from ddpx.launch.study import set_choice

    runs = [record(name, seed, dev) for name, dev in [("scratch", 0.9), ("a", 0.6), ("b", 0.7)] for seed in (0, 1)]
    scratch, a, b = Candidate("scratch", "r", baseline=True), Candidate("a", "r"), Candidate("b", "r")
    choice = set_choice(StudySet("s", (scratch, a, b)), runs, (0, 1))
    assert choice["chosen"] == "b" and choice["baseline"] == "scratch" and set(choice["evidence"]) == {"a", "b"}
    plain = set_choice(StudySet("s", (Candidate("scratch", "r"), a, b)), runs, (0, 1))
    assert plain == choose(runs, ["scratch", "a", "b"], (0, 1)) and plain["chosen"] == "scratch"


def test_held_out_values_are_unreadable_for_a_set_without_a_recorded_choice(tmp_path):
    folder = StudyDir(tmp_path, "s", "f" * 10, "c" * 10)
    folder.create("", {})
    recorded = folder.record_choice({"other": {"chosen": None}})
    with pytest.raises(RuntimeError, match="no recorded choice"):
        recorded.heldout(record("a", 0, 0.8))
    with pytest.raises(RuntimeError, match="no recorded choice"):  # nor its held-out predictions
        recorded.heldout_answers(record("a", 0, 0.8))
    assert [e["event"] for e in folder.events()] == ["choice recorded"]


def test_the_interval_says_past_short_or_level():
    mean, low, high = t_interval([0.02, 0.03, 0.025, 0.028, 0.022])
    assert low < mean < high and verdict(low, high, True) == "past" and verdict(low, high, False) == "short"
    assert verdict(*t_interval([0.01, -0.01, 0.02])[1:], True) == "level"


@pytest.mark.parametrize(
    "text, said",
    [
        ('name = "x"\n', "declares no set"),
        ("[sets.a]\ncandidates = []\n", "has no candidate"),
        ('seeds = [1, 1]\n[sets.a]\ncandidates = ["r"]\n', "distinct whole numbers"),
        ('[sets.a]\ncandidate = ["r"]\n', "Did you mean 'candidates'?"),
        ('rule = "best_heldout"\n[sets.a]\ncandidates = ["r"]\n', "unknown rule"),
        ('[sets.a]\ncandidates = ["r", "r"]\n', "names candidate(s) r twice"),
        (
            'ensembles = ["seed"]\n[sets.a]\ncandidates = ["r"]\n',
            "unknown ensemble 'seed' in `ensembles`. Did you mean 'seeds'?",
        ),
        ('[sets.a]\nensembles = "families"\ncandidates = ["r"]\n', "`ensembles` is a list of distinct words"),
        ('[sets.a]\ncandidates = [{recipe = "r", baseline = true}]\n', "its only candidate 'r' is its baseline"),
        (
            '[sets.a]\ncandidates = [{recipe = "r", baseline = true}, {recipe = "q", baseline = true}, "p"]\n',
            "set 'a' has 2 baselines (r, q): a set has at most one",
        ),
        ('[sets.a]\ncandidates = [{recipe = "r", baseline = "yes"}, "q"]\n', "`baseline` is true or false"),
    ],
)
def test_a_bad_study_file_is_one_clear_error(tmp_path, text, said):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(UserError) as caught:
        read_study(path)
    assert said in caught.value.message


def test_the_ensembles_are_its_seeds_together_unless_the_study_or_a_set_says_otherwise(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[sets.a]\ncandidates = ["r"]\n[sets.b]\nensembles = ["seeds", "families"]\ncandidates = ["r"]\n')
    assert [s.ensembles for s in read_study(path).sets] == [("seeds",), ("seeds", "families")]
    path.write_text(
        'ensembles = ["families"]\n[sets.a]\ncandidates = ["r"]\n[sets.b]\nensembles = []\ncandidates = ["r"]\n'
    )
    assert [s.ensembles for s in read_study(path).sets] == [("families",), ()]


def test_a_set_may_declare_one_baseline_which_the_rule_never_chooses(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(
        '[sets.a]\ncandidates = [{recipe = "r", name = "scratch", baseline = true}, "tuned", "other"]\n'
        '[sets.b]\ncandidates = ["r", "q"]\n'
    )
    with_baseline, without = read_study(path).sets
    assert with_baseline.baseline == "scratch" and with_baseline.contenders == ["tuned", "other"]
    assert without.baseline is None and without.contenders == ["r", "q"]


def made_records(ensembles: dict, published: dict) -> dict:
    """Exported records of one set whose chosen candidate ran seeds 0 and 1."""
    runs = [
        {"candidate": "a", "seed": s, "dev": 0.8, "heldout": {"heldout_roc_auc": v}} for s, v in [(0, 0.7), (1, 0.8)]
    ]
    entry = {
        "name": "bbbp",
        "metric": "roc_auc",
        "greater_is_better": True,
        "candidates": ["a"],
        "chosen": "a",
        "evidence": {"a": {"mean_dev": 0.8}},
        "published": published,
        "runs": runs,
        "ensembles": ensembles,
    }
    return {"format": 2, "study": {"study.name": "s"}, "sets": [entry]}


def test_the_table_shows_the_ensembles_beside_the_chosen_candidate_and_says_why_one_has_no_value():
    seeds = {"seeds": {"value": 0.81234, "reason": ""}}
    table = markdown(made_records(seeds, {}))
    assert "| held-out mean ± sd (seeds) | its seeds together | against published" in table
    assert "| bbbp | roc_auc | a | 0.8000 | 0.7500 ± 0.0707 (2) | 0.8123 | | |" in table
    both = {
        "seeds": {"value": None, "reason": "a seed 1: reports/heldout_predictions.csv does not exist"},
        "families": {"values": [0.75, 0.85], "reason": ""},
    }
    lines = markdown(made_records(both, {"x": 0.7, "y": 0.9})).splitlines()
    assert lines[4].startswith(
        "| bbbp | roc_auc | a | 0.8000 | 0.7500 ± 0.0707 (2) | — (note 1) | 0.8000 ± 0.0707 (2) | x"
    )
    assert lines[5].startswith("| | | | | | | | y 0.900")  # the second published row keeps the columns
    assert lines[-1] == "1. bbbp, its seeds together: a seed 1: reports/heldout_predictions.csv does not exist."
    old = markdown({**made_records({}, {}), "format": 1})  # records before the ensembles: the table as it was
    assert "together" not in old and "| bbbp | roc_auc | a | 0.8000 | 0.7500 ± 0.0707 (2) | | |" in old


def baseline_set(name: str, metric: str, higher: bool, tuned: list, scratch: list) -> dict:
    """Exported records of one set whose chosen candidate ``tuned`` has the baseline ``scratch``
    (their held-out values by seed; ``None``: no run of that seed)."""
    runs = [
        {"candidate": candidate, "seed": seed, "dev": 0.5, "heldout": {f"heldout_{metric}": value}}
        for candidate, values in (("tuned", tuned), ("scratch", scratch))
        for seed, value in enumerate(values)
        if value is not None
    ]
    entry = made_records({}, {})["sets"][0]
    entry.update(name=name, metric=metric, greater_is_better=higher, chosen="tuned", baseline="scratch", runs=runs)
    entry.update(candidates=["scratch", "tuned"], evidence={"tuned": {"mean_dev": 0.5}})
    return entry


def test_the_table_compares_the_chosen_candidate_with_the_baseline_seed_by_seed():
    auc = baseline_set("bbbp", "roc_auc", True, [0.80, 0.82, 0.84], [0.75, 0.78, 0.80])
    rmse = baseline_set("esol", "rmse", False, [0.60, 0.62, 0.58], [0.70, 0.73, None])  # seed 2: no baseline run
    plain = made_records({}, {"x": 0.7})["sets"][0]
    lines = markdown({"format": 2, "study": {}, "sets": [auc, rmse, plain]}).splitlines()
    assert lines[2].endswith(
        "| baseline | baseline held-out mean ± sd (seeds) | chosen − baseline, seed by seed: difference "
        "[95 % interval] (seeds) | | against published: difference [95 % interval] | |"
    )
    mean, low, high = t_interval([0.05, 0.04, 0.04])
    assert f"| scratch | 0.7767 ± 0.0252 (3) | {mean:+.4f} [{low:+.4f}, {high:+.4f}] (3) | past |" in lines[4]
    assert lines[4].endswith("+0.0433 [+0.0290, +0.0577] (3) | past | | |")
    mean, low, high = t_interval([0.60 - 0.70, 0.62 - 0.73])  # the seeds both have; lower is better
    assert lines[5].endswith(
        f"| scratch | 0.7150 ± 0.0212 (2) | {mean:+.4f} [{low:+.4f}, {high:+.4f}] (2) | past | | |"
    )
    assert verdict(low, high, True) == "short"  # were higher better, the same difference would be short
    assert lines[6].startswith("| bbbp | roc_auc | a | 0.8000 | 0.7500 ± 0.0707 (2) |  |  |  |  | x 0.700: ")
    assert lines[7:] == [  # the rows' words, counted: the study's goals read from the table
        "",
        "Where the chosen candidates stand (sets chosen: 3 of 3):",
        "- against its baseline: past on 2 (bbbp, esol), level on none, short on none",
        "- against x: past on none, level on 1 (bbbp), short on none",
    ]
    nothing = {**auc, "runs": [r for r in auc["runs"] if r["candidate"] == "tuned"]}
    table = markdown({"format": 2, "study": {}, "sets": [nothing]})
    assert (
        "| scratch | — (note 1) |  |  | | |" in table
        and "1. bbbp, baseline scratch: no run of it has a held-out" in table
    )
    apart = {**auc, "runs": [r for r in auc["runs"] if (r["candidate"] == "tuned") == (r["seed"] == 0)]}
    table = markdown({"format": 2, "study": {}, "sets": [apart]})  # chosen: seed 0 only; baseline: seeds 1, 2
    assert "| scratch | 0.7900 ± 0.0141 (2) | — (note 1) |  | | |" in table
    assert "1. bbbp: tuned and its baseline scratch have no seed's held-out value in common." in table
    assert "baseline" not in markdown(made_records({}, {"x": 0.7}))  # no baseline: the table as it was


def finished_run(folder: Path, set_name: str, candidate: str, seed: int, value: float) -> RunRecord:
    """A finished run's folder with its summary.json (no training), and its record."""
    from ddpx.contract.records import RunSummary

    run_dir = folder / f"{set_name}-{candidate}-{seed}"
    run_dir.mkdir(parents=True)
    summary = RunSummary({"heldout_roc_auc": value}, "roc_auc", True, value, 1, 1, 0.0, 10, run_dir=str(run_dir))
    summary.write(run_dir / "summary.json")
    return RunRecord.of(set_name, candidate, seed, f"{set_name}{candidate}{seed}", summary)


def test_the_baseline_is_read_after_the_choice_and_its_table_regenerates_from_the_export(tmp_path):
    from ddpx.launch.study import set_choice
    from ddpx.records.study_report import export_records, write_records

    (tmp_path / "s.toml").write_text(
        'seeds = [0, 1]\nensembles = []\n[sets.a]\ncandidates = [{recipe = "r", name = "scratch", baseline = true},'
        ' "tuned"]\n[sets.b]\ncandidates = ["r", "q"]\n'
    )
    spec = read_study(tmp_path / "s.toml")
    runs = [
        finished_run(tmp_path / "runs", s, c, seed, 0.7 + 0.1 * (c == "tuned") + 0.01 * seed)
        for s, names in (("a", ("scratch", "tuned")), ("b", ("r", "q")))
        for c in names
        for seed in (0, 1)
    ]
    folder = StudyDir(tmp_path / "studies", spec.name, spec.digest, "c" * 10)
    folder.create(spec.text, {})
    recorded = folder.record_choice({s.name: set_choice(s, runs, spec.seeds) for s in spec.sets})
    records = export_records(spec, recorded, runs, {"study.name": spec.name})
    with_baseline, without = records["sets"]
    assert with_baseline["chosen"] == "tuned" and with_baseline["baseline"] == "scratch" and "baseline" not in without
    events = [(e["event"], e.get("candidate")) for e in folder.events()]
    assert events[0] == ("choice recorded", None) and ("heldout read", "scratch") in events
    exported = write_records(records, tmp_path / "records.json")
    table = markdown(read_records(exported))
    assert (
        table == markdown(records)
        and "| scratch | 0.7050 ± 0.0071 (2) | +0.1000 [+0.1000, +0.1000] (2) | past |" in table
    )


def test_a_set_not_chosen_yet_is_reported_by_its_finished_runs_and_none_of_its_values(tmp_path):
    from ddpx.launch.study import set_choice
    from ddpx.records.study_report import export_records

    (tmp_path / "s.toml").write_text(
        'seeds = [0, 1]\nensembles = []\n[sets.a]\ncandidates = ["r"]\n[sets.b]\ncandidates = ["r", "q"]\n'
    )
    spec = read_study(tmp_path / "s.toml")
    runs = [finished_run(tmp_path / "runs", s, "r", seed, 0.8) for s in ("a", "b") for seed in (0, 1)]
    folder = StudyDir(tmp_path / "studies", spec.name, spec.digest, "c" * 10)
    folder.create(spec.text, {})
    recorded = folder.record_choice({"a": set_choice(spec.sets[0], runs, spec.seeds)}, now=["a"])  # b's q runs on
    chosen, pending = export_records(spec, recorded, runs, {"study.name": spec.name})["sets"]
    assert chosen["chosen"] == "r" and len(chosen["runs"]) == 2
    assert pending == {
        "name": "b",
        "metric": "roc_auc",
        "candidates": ["r", "q"],
        "chosen": None,
        "pending": "not chosen yet: 2 of its 4 runs finished",
        "published": {},
        "runs": [],
    }
    assert [e.get("set") for e in folder.events() if e["event"] == "heldout read"] == ["a", "a"]  # b's stay unread
    table = markdown({"study": {}, "sets": [{**chosen, "published": {"p": 0.5}}, pending]})
    assert "| b | roc_auc | not chosen yet: 2 of its 4 runs finished | | | |" in table
    assert table.endswith("(sets chosen: 1 of 2):\n- against p: past on 1 (a), level on none, short on none\n")


def test_a_study_keeps_the_sets_an_export_of_the_same_file_chose_and_names_their_code(tmp_path):
    from ddpx.launch.study import set_choice
    from ddpx.records.study_kept import read_kept_sets
    from ddpx.records.study_report import export_records, write_records

    (tmp_path / "s.toml").write_text(
        'seeds = [0, 1]\nensembles = []\n[sets.a]\ncandidates = ["r"]\n[sets.b]\ncandidates = ["q"]\n'
    )
    spec = read_study(tmp_path / "s.toml")
    runs = [finished_run(tmp_path / "runs", s, c, seed, 0.8) for s, c in (("a", "r"), ("b", "q")) for seed in (0, 1)]
    folder = StudyDir(tmp_path / "studies", spec.name, spec.digest, "c" * 10)
    folder.create(spec.text, {})
    recorded = folder.record_choice({"a": set_choice(spec.sets[0], runs, spec.seeds)}, now=["a"])
    old = {"study.digest": spec.digest, "code.commit": "1" * 40, "code.code_digest": "e" * 64}
    earlier = write_records(export_records(spec, recorded, runs, old), tmp_path / "old.json")  # b not chosen there
    kept = read_kept_sets(earlier, spec)
    origin = {"records": "old.json", "code.commit": "1" * 40, "code.code_digest": "e" * 64}
    assert list(kept) == ["a"] and kept["a"] == {**read_records(earlier)["sets"][0], "kept_from": origin}

    # here: b chosen from its own runs, a as the export holds it, and the table names a's code
    now = RecordedChoice(folder, {"b": set_choice(spec.sets[1], runs, spec.seeds)})
    records = export_records(spec, now, runs, {"study.digest": spec.digest, "code.code_digest": "c" * 64}, kept)
    assert records["sets"][0] == kept["a"] and records["sets"][1]["chosen"] == "q"
    assert markdown(records).endswith("1. a: kept from old.json, its runs made by code 111111111111.\n")
    again = write_records(records, tmp_path / "new.json")  # kept again: the code of its runs stays named
    assert read_kept_sets(again, spec)["a"]["kept_from"] == origin

    malformed = tmp_path / "malformed.json"
    for broken in ({**read_records(earlier), "study": None}, {**read_records(earlier), "sets": ["a"]}):
        malformed.write_text(json.dumps(broken))
        with pytest.raises(UserError, match=re.escape("its 'study' or 'sets' entries are not what")):
            read_kept_sets(malformed, spec)

    (tmp_path / "s.toml").write_text("# edited\n" + spec.text)
    for path, said in [
        (earlier, "is an export of another study file"),
        (tmp_path / "none.json", "does not exist; `ddpx study report"),
        (tmp_path / "s.toml", "is not a study's exported records (JSON)"),
    ]:
        with pytest.raises(UserError, match=re.escape(said)):
            read_kept_sets(path, read_study(tmp_path / "s.toml"))


def test_a_set_is_kept_only_with_the_data_its_runs_read(tmp_path):
    from ddpx.launch.study import set_choice
    from ddpx.records.study_kept import read_kept_sets
    from ddpx.records.study_report import export_records, write_records

    (tmp_path / "d.csv").write_text("smiles,y\nCCO,1\n")
    (tmp_path / "s.toml").write_text('seeds = [0]\nensembles = []\n[sets.a]\ndata = "d.csv"\ncandidates = ["r"]\n')
    spec = read_study(tmp_path / "s.toml")
    runs = [finished_run(tmp_path / "runs", "a", "r", 0, 0.8)]
    folder = StudyDir(tmp_path / "studies", spec.name, spec.digest, "c" * 10)
    folder.create(spec.text, {})
    recorded = folder.record_choice({"a": set_choice(spec.sets[0], runs, spec.seeds)}, now=["a"])
    export = write_records(export_records(spec, recorded, runs, {"study.digest": spec.digest}), tmp_path / "e.json")
    assert read_records(export)["sets"][0]["data_sha256"] == hashlib.sha256(b"smiles,y\nCCO,1\n").hexdigest()[:16]
    assert list(read_kept_sets(export, spec)) == ["a"]
    (tmp_path / "d.csv").write_text("smiles,y\nCCO,0\n")  # the data changed since
    with pytest.raises(UserError, match=re.escape("set 'a' of '") + ".*" + re.escape("was chosen on other data")):
        read_kept_sets(export, spec)


def test_what_a_study_kept_or_chose_stands_and_a_later_export_adds_only_other_sets(tmp_path):
    from ddpx.contract.launch_settings import LaunchSettings
    from ddpx.launch.study import plan_study
    from ddpx.plugin_host.registry import load_registry
    from ddpx.records.study_kept import merged_kept

    earlier, export = {"a": {"chosen": "x"}}, {"a": {"chosen": "y"}, "b": {"chosen": "z"}, "c": {"chosen": "w"}}
    assert merged_kept(earlier, export, chosen_here={"b": "v"}) == {"a": {"chosen": "x"}, "c": {"chosen": "w"}}
    (tmp_path / "s.toml").write_text('seeds = [0]\n[sets.a]\ncandidates = ["r"]\n[sets.b]\ncandidates = ["q"]\n')
    spec, settings = read_study(tmp_path / "s.toml"), LaunchSettings(runs_dir=str(tmp_path / "runs"))
    first = plan_study(load_registry(), spec, settings, kept={"a": {"name": "a", "chosen": "r"}, "b": export["b"]})
    first.folder.create(spec.text, {})
    first.folder.keep_sets(first.kept)
    second = plan_study(load_registry(), spec, settings, kept={"a": export["a"]})  # a later export: a stands
    assert second.kept == first.kept and second.trials == []
    assert plan_study(load_registry(), spec, settings).kept == first.kept  # without an export: what it kept


def kept_study(tmp_path: Path, data: str = ""):
    """A one-set study of a copy of the tiny recipe (``tiny.toml``, to edit), its registry and settings."""
    from ddpx.contract.launch_settings import LaunchSettings
    from ddpx.plugin_host.registry import load_registry

    (tmp_path / "tiny.toml").write_text(TINY.read_text())
    (tmp_path / "s.toml").write_text(
        f'seeds = [0]\nensembles = []\n[sets.a]\n{data}overrides = ["train.max_epochs=1"]\n'
        f'candidates = [{{recipe = "{tmp_path / "tiny.toml"}", name = "r"}}]\n'
    )
    return read_study(tmp_path / "s.toml"), load_registry(), LaunchSettings(runs_dir=str(tmp_path / "runs"))


def edit_tiny(tmp_path: Path, *changes: tuple[str, str]) -> None:
    text = TINY.read_text()
    for old, new in changes:
        text = text.replace(old, new)
    (tmp_path / "tiny.toml").write_text(text)


def test_a_kept_set_names_each_setting_its_candidates_resolve_to_otherwise_now(tmp_path, capsys):
    """An export records each chosen set's candidates' resolved settings; a study keeping the set from it
    names those whose value differs with its own code and files, on its kept line and in the table's note,
    worked out again each time (kept.json holds the export's entry as it was)."""
    from ddpx.cli.study_report import print_kept
    from ddpx.launch.study import plan_study, set_choice
    from ddpx.records.study_kept import read_kept_sets
    from ddpx.records.study_report import export_records, write_records

    spec, registry, settings = kept_study(tmp_path)
    planned = plan_study(registry, spec, settings)
    ran = planned.recipes["a"]["r"]
    assert (ran["train.lr"], ran["train.max_epochs"], ran["model.dim_hidden"]) == (0.1, 1, 64)
    assert "train.seed" not in ran and "description" not in ran  # the seeds recorded apart; words
    runs = [finished_run(tmp_path / "made", "a", "r", 0, 0.8)]
    planned.folder.create(spec.text, {})
    recorded = planned.folder.record_choice({"a": set_choice(spec.sets[0], runs, spec.seeds)}, now=["a"])
    old = {"study.digest": spec.digest, "code.code_digest": "e" * 64}
    export = write_records(export_records(spec, recorded, runs, old, recipes=planned.recipes), tmp_path / "e.json")
    assert read_records(export)["sets"][0]["recipes"] == {"r": ran}

    elsewhere = LaunchSettings(runs_dir=str(tmp_path / "other"))  # another machine's study folder
    assert "recipes_changed" not in plan_study(registry, spec, elsewhere, kept=read_kept_sets(export, spec)).kept["a"]
    edit_tiny(tmp_path, ("lr = 0.1", "lr = 0.05"), ("dim_hidden = 64", "dim_hidden = 32"), ("small", "SMALL"))
    study = plan_study(registry, spec, elsewhere, kept=read_kept_sets(export, spec))
    changed = ["r: model.dim_hidden 64 then, 32 now", "r: train.lr 0.1 then, 0.05 now"]  # not the description
    assert study.kept["a"]["recipes_changed"] == changed
    print_kept(study)
    said = capsys.readouterr().out.splitlines()
    assert said[0].endswith("not run again; its recipes resolve otherwise now:") and said[1:] == [
        f"    {c}" for c in changed
    ]
    same_code = {"study.digest": spec.digest, "code.code_digest": "e" * 64}  # only the recipe file changed
    table = markdown(export_records(spec, RecordedChoice(planned.folder, {}), [], same_code, study.kept))
    assert table.endswith(
        f"1. a: kept from e.json, its recipes resolve otherwise with this code ({'; '.join(changed)}).\n"
    )
    other_code = {**same_code, "code.code_digest": "f" * 64}
    both = markdown(export_records(spec, RecordedChoice(planned.folder, {}), [], other_code, study.kept))
    assert "1. a: kept from e.json, its runs made by code eeeeeeeeeeee, its recipes resolve otherwise" in both

    study.folder.create(spec.text, {})
    study.folder.keep_sets(study.kept)  # as `study run` keeps them: the export's entry, without what differs
    assert "recipes_changed" not in study.folder.kept_sets()["a"]
    study.folder.start_runs([])
    reported = study_report_records(tmp_path / "s.toml", str(tmp_path / "other"))  # `ddpx study report s.toml`
    assert reported["sets"][0]["recipes_changed"] == changed  # worked out when reported
    again = plan_study(registry, spec, elsewhere)  # the same folder without --from-records: worked out again
    assert again.kept["a"]["recipes_changed"] == changed
    edit_tiny(tmp_path)  # the file as it was: nothing differs any more
    assert "recipes_changed" not in plan_study(registry, spec, elsewhere).kept["a"]
    (tmp_path / "tiny.toml").unlink()
    [gone] = plan_study(registry, spec, elsewhere).kept["a"]["recipes_changed"]
    assert gone.startswith("r: does not resolve now (")


def test_the_settings_are_compared_as_they_were_when_the_set_was_chosen(tmp_path):
    """A chosen set's settings stand as they were at its choice; the data's path is a setting where the
    set leaves the data to the recipe; a setting only one side has is not a change; True is not 1."""
    from ddpx.launch.study import plan_study, set_choice
    from ddpx.records.study_recipes import recipe_changes, recipe_settings

    spec, registry, settings = kept_study(tmp_path)
    first = plan_study(registry, spec, settings)
    first.folder.create(spec.text, {})
    first.folder.keep_recipes(first.recipes)
    runs = [finished_run(tmp_path / "made", "a", "r", 0, 0.8)]
    first.folder.record_choice({"a": set_choice(spec.sets[0], runs, spec.seeds)}, now=["a"])
    edit_tiny(tmp_path, ("lr = 0.1", "lr = 0.05"))  # edited after the choice
    assert plan_study(registry, spec, settings).recipes["a"] == first.recipes["a"]
    config = {"description": "words", "dataset": {"path": "d.csv", "dim_in": 8}, "train": {"seed": 3, "lr": 0.1}}
    assert recipe_settings(config, data_named=True) == {"dataset.dim_in": 8, "train.lr": 0.1}  # its digest, apart
    assert recipe_settings(config, data_named=False) == {"dataset.dim_in": 8, "dataset.path": "d.csv", "train.lr": 0.1}
    then = {"r": {"train.lr": 0.1, "train.gone": 1, "train.flag": 1}}
    now = {"r": {"train.lr": 0.1, "train.new": 2, "train.flag": True}}
    assert recipe_changes(then, now) == ["r: train.flag 1 then, true now"]


def test_a_chosen_sets_runs_stand_and_a_change_of_their_recipe_is_refused_before_launch(tmp_path):
    """Started again with a chosen set's recipe file changed, the study stops before launch rather than
    run that set again (its choice would not be made again, its table would lose the runs it was read
    from); a run of it that never finished is not a change and runs as before."""
    from dataclasses import replace

    from ddpx.launch.study import plan_study, set_choice

    spec, registry, settings = kept_study(tmp_path)
    study = plan_study(registry, spec, settings)
    study.folder.create(spec.text, {})
    [trial] = study.trials
    done = replace(finished_run(tmp_path / "made", "a", "r", 0, 0.8), key=trial.key)
    study.folder.start_runs([])
    study.folder.add(done)
    study.folder.record_choice({"a": set_choice(spec.sets[0], [done], spec.seeds)}, now=["a"])
    assert plan_study(registry, spec, settings).trials[0].reused == done  # as it was: the run stands
    edit_tiny(tmp_path, ("lr = 0.1", "lr = 0.05"))
    with pytest.raises(UserError, match=re.escape("set(s) a of study 's' were chosen on runs whose recipe or data")):
        plan_study(registry, spec, settings)
    study.folder.start_runs([])  # the chosen set's run never finished here (--choose-with-failures)
    assert plan_study(registry, spec, settings).trials[0].reused is None  # it runs again, as before


def test_each_run_ended_says_how_long_its_sets_runs_left_may_take_at_that_sets_pace(capsys):
    """As a run ends: the runs ended of those to run, and for its set, while it has runs left, their time
    at the set's own pace (the mean wall time of its ended runs, so many side by side)."""
    from types import SimpleNamespace

    from ddpx.cli.study_report import RunProgress

    def trial(number: int, name: str, wall: float | None):
        summary = (
            None
            if wall is None
            else SimpleNamespace(wall_seconds=wall, members=None, best_epoch=3, best_dev=0.7, metric="roc_auc")
        )
        status = "FAILED" if wall is None else "FINISHED"
        return SimpleNamespace(
            number=number, set_name=name, label=f"set={name}", summary=summary, status=status, error=""
        )

    trials = [trial(1, "tox21", 100.0), trial(2, "tox21", 140.0), trial(3, "tox21", None), trial(4, "hiv", 3000.0)]
    progress = RunProgress(trials + [trial(5, "tox21", 0.0), trial(6, "hiv", 0.0)], at_once=2)
    for each in trials:
        progress(each)
    lines = [line.split(" [")[1] for line in capsys.readouterr().out.splitlines()]
    assert lines[0].endswith(
        "since the start; tox21: 3 more, about 0:03:20 at its pace so far]"
    )  # 2 at once: 100 s x 2
    assert lines[1].endswith("; tox21: 2 more, about 0:02:00 at its pace so far]")  # mean 120 s, one round of 2
    assert lines[2].endswith("; tox21: 1 more, about 0:02:00 at its pace so far]")  # a failed run counts as ended
    assert lines[3].startswith("4 of 6 ended") and lines[3].endswith("; hiv: 1 more, about 0:50:00 at its pace so far]")


def test_a_bad_key_in_any_run_is_an_error_before_anything_starts(ddpx_here, tmp_path):
    (tmp_path / "s.toml").write_text(STUDY.replace("model.dim_hidden=16", "model.dim_hiden=16"))
    result = ddpx_here("study", "run", "s.toml", "--tracking", "none")
    assert result.returncode == 2 and "model.dim_hiden" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "ddpx-runs").exists()


def environment(**extra: str) -> dict[str, str]:
    env = {**os.environ, "DDPX_SYSTEM_METRICS": "false", "COLUMNS": "200", **extra}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TEST_PLUGINS), env.get("PYTHONPATH")]))
    return env


def run_study(folder: Path, tracking_uri: str, experiment: str, stop_after: int | None = None, *more: str, **env: str):
    """``ddpx study run`` in ``folder`` (``more``: its further options); with ``stop_after`` N, SIGTERM
    (``kill``; Ctrl-C does the same, where a shell has not made the process ignore it) once N runs have ended."""
    args = [sys.executable, "-m", "ddpx", "study", "run", "s.toml", "--tracking-uri", tracking_uri]
    args += ["--experiment", experiment, *more]
    process = subprocess.Popen(
        args, cwd=folder, env=environment(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines, ended = [], 0
    for line in process.stdout:
        lines.append(line)
        ended += line.startswith("ddpx: run ")
        if stop_after is not None and ended == stop_after:
            process.send_signal(signal.SIGTERM)
            stop_after = None
    stderr = process.stderr.read()
    return process.wait(timeout=120), "".join(lines), stderr


@pytest.mark.slow
@pytest.mark.timeout(600)  # five studies one after another: 190-250 s here, past the 300 s guard on a loaded machine
def test_a_study_stops_goes_on_chooses_on_dev_first_and_reports_from_its_records(
    ddpx_here, tmp_path, tracking_uri, experiment
):
    (tmp_path / "s.toml").write_text(STUDY)
    status, out, err = run_study(tmp_path, tracking_uri, experiment, stop_after=3)
    assert status == 130 and "goes on where it stopped" in err and "Traceback" not in err, err
    assert "heldout" not in out and "held-out" not in out  # nothing held-out shown while running
    finished = [line for line in out.splitlines() if line.startswith("ddpx: run ") and "FAILED" not in line]
    assert len(finished) == 3
    first = finished[0]  # how far the command has come
    assert re.search(r" \[1 of 6 ended, \d:\d\d:\d\d since the start; easy: 1 more, about \d:\d\d:\d\d", first), first
    # the easy set's two runs ended: it is chosen there and then, on dev, while the hard set runs on
    assert out.index("ddpx: set easy: chose wide by mean dev_accuracy (wide ") < out.index(finished[2])
    assert "ddpx: its table, while the study goes on: ddpx study report s.toml" in out
    [folder] = (tmp_path / "ddpx-runs" / "studies").glob("two_sets-*")
    assert sorted(json.loads((folder / "choice.json").read_text())) == ["easy"]
    table = markdown(
        study_report_records(tmp_path / "s.toml", str(tmp_path / "ddpx-runs"))
    )  # `ddpx study report s.toml`
    assert re.search(r"\| easy \| accuracy \| wide \| [\d.]+ \| [\d.]+ ± [\d.]+ \(2\) \|", table), table
    assert "| hard | accuracy | not chosen yet: 1 of its 4 runs finished | | |" in table

    crash = {"DDPX_PLUGINS": "ddpx_testplug_failing", "DDPX_TEST_FAIL_ONCE": str(tmp_path / "crashed")}
    status, out, err = run_study(tmp_path, tracking_uri, experiment, **crash)  # the next run crashes, once
    assert "3 finished earlier, 3 to run" in out  # the three finished runs are not run again
    assert status == 1 and "1 run(s) of the study failed: " in err and "Traceback" not in err, err
    assert "--choose-with-failures" in err and "chose" not in out  # a failed run holds its set's choice back
    assert sorted(json.loads((folder / "choice.json").read_text())) == ["easy"]  # the easy set's is kept
    crashed = Path(re.search(r"of the study failed: [^(]*\((/[^)]+)\)", err)[1])
    assert (crashed / "checkpoints" / "last.pt").is_file()  # it crashed after its epoch's checkpoint

    status, out, err = run_study(tmp_path, tracking_uri, experiment)
    assert status == 0, err
    assert "5 finished earlier, 1 to run (1 from where they were cut off)" in out  # only the failed run goes on
    assert f"ddpx: resuming the run in {crashed}" in out  # in its own folder, from its checkpoint
    assert re.search(r"resuming from .*last\.pt: 1 epoch\(s\) done", out), out
    events = [e["event"] for e in _events(folder)]
    assert events.index("choice recorded") < events.index("choice recorded on the parent run")
    assert events.index("choice recorded on the parent run") < events.index("heldout read")
    assert events.index("choice recorded on the parent run") < events.index("heldout predictions read")
    assert "chose" in out and "| easy | accuracy |" in out
    assert "set hard: chose narrow by mean dev_accuracy (narrow " in out and "its baseline wide is never chosen" in out
    read = [(e["event"], e.get("set"), e.get("candidate")) for e in _events(folder)]
    [hard_chosen] = [
        i for i, e in enumerate(_events(folder)) if e["event"] == "choice recorded" and "hard" in e["sets"]
    ]
    assert _events(folder)[hard_chosen + 1]["event"] == "choice recorded on the parent run"
    assert not [what for what in read[:hard_chosen] if what[:2] == ("heldout read", "hard")]  # none before its choice
    baseline_reads = [i for i, what in enumerate(read) if what == ("heldout read", "hard", "wide")]
    assert len(baseline_reads) == 2 and min(baseline_reads) > hard_chosen

    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    [parent] = [r for r in runs if r.data.tags.get("ddpx.study") == "parent"]
    choice = json.loads((folder / "choice.json").read_text())
    assert parent.data.tags["ddpx.study.choice.easy"] == choice["easy"]["chosen"]
    nested = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert all(  # each run says which set and candidate it is, to filter by in the MLflow UI
        r.data.tags.get("ddpx.study.set") in ("easy", "hard") and r.data.tags.get("ddpx.study.candidate")
        for r in nested
    )
    [went_on] = [r for r in nested if r.info.run_name == crashed.name]  # the crashed run's own MLflow run, finished
    assert went_on.info.status == "FINISHED" and went_on.data.metrics["heldout_accuracy"] > 0
    # the stopped study's parent run went on: every finished run of the three attempts is nested under it
    assert (
        sum(r.info.status == "FINISHED" for r in nested) == 6
        and parent.data.params["study.digest"] == read_study(tmp_path / "s.toml").digest
    )

    exported = tmp_path / "records.json"
    reported = ddpx_here("study", "report", "s.toml", "--export", str(exported))  # no rank: in this process
    assert reported.returncode == 0, reported.output
    report, again = reported.stdout, ddpx_here("study", "report", str(exported)).stdout
    assert report == again == markdown(json.loads(exported.read_text())) and report in out
    assert json.loads(exported.read_text())["study"]["study.file"] == "s.toml"  # no folder of this machine
    assert "| its seeds together | families together, mean ± sd (seeds) | baseline |" in report
    assert re.search(
        r"\| hard \| accuracy \| narrow \|.* \| wide \| [\d.]+ ± [\d.]+ \(2\) \| [-+][\d.]+ \[.*\] \(2\) \| (past|short|level) \|",
        report,
    )

    # the synthetic task draws its data from the seed: the seeds' models answer different samples and
    # make no ensemble, which the records and the table say; the candidates' models of one seed answer
    # the same samples, and their ensemble is their class probabilities averaged sample by sample,
    # as computed here from their predictions files alone
    easy, hard = json.loads(exported.read_text())["sets"]
    assert hard["baseline"] == "wide" and hard["chosen"] == "narrow" and "baseline" not in easy
    # each chosen set records what its candidates ran with (the first seed's resolved recipe)
    assert (hard["recipes"]["narrow"]["model.dim_hidden"], hard["recipes"]["wide"]["model.dim_hidden"]) == (16, 64)
    assert easy["recipes"]["wide"]["dataset.class_sep"] == 1.5 and "train.seed" not in easy["recipes"]["wide"]
    assert set(easy["ensembles"]) == {"seeds"} and easy["ensembles"]["seeds"]["value"] is None
    assert "the runs' held-out samples differ" in hard["ensembles"]["seeds"]["reason"]
    assert "— (note 1) |" in report and "\n1. easy, its seeds together: the runs' held-out samples" in report
    folders = {(r["set"], r["candidate"], r["seed"]): r["run_dir"] for r in _lines(folder / "runs.jsonl")}
    per_seed = [_averaged_accuracy([folders["hard", c, seed] for c in ("narrow", "wide")]) for seed in (0, 1)]
    assert hard["ensembles"]["families"] == {"values": per_seed, "reason": ""}

    # another machine, without these runs: the hard set kept from the export (made by other code, say), the easy one run
    elsewhere, kept = tmp_path / "elsewhere", json.loads(exported.read_text())
    elsewhere.mkdir()
    (elsewhere / "s.toml").write_text(STUDY)
    kept["study"].update({"code.commit": "0" * 40, "code.code_digest": "f" * 64})
    kept["sets"][0] = {**easy, "chosen": None, "pending": "not chosen yet", "runs": []}
    (elsewhere / "kept.json").write_text(json.dumps(kept))
    status, out, err = run_study(elsewhere, tracking_uri, experiment, None, "--from-records", "kept.json")
    assert status == 0 and "2 run(s) in 1 set(s) (1 kept), 0 finished earlier, 2 to run" in out, err
    assert (
        "ddpx: set hard: kept from kept.json (chose narrow; its 4 runs made by code 000000000000), not run again" in out
    )
    assert "set easy: chose wide" in out and "set hard: chose" not in out
    parents = client.search_runs([parent.info.experiment_id], "tags.`ddpx.study` = 'parent'")
    [there] = [r for r in parents if r.data.tags["ddpx.study.folder"].startswith(str(elsewhere))]
    assert there.data.tags["ddpx.study.kept_sets"] == "hard" and there.data.params["study.kept_sets"] == "hard"
    carried = study_report_records(elsewhere / "s.toml", str(elsewhere / "ddpx-runs"))
    assert carried["sets"][1] == {
        **hard,
        "kept_from": {"records": "kept.json", **{k: kept["study"][k] for k in ("code.commit", "code.code_digest")}},
    }
    assert carried["sets"][0]["chosen"] == "wide" and len(carried["sets"][0]["runs"]) == 2
    assert "hard: kept from kept.json, its runs made by code 000000000000." in markdown(carried) in out

    (tmp_path / "s.toml").write_text("# edited\n" + STUDY)  # another file: another study, the runs reused
    status, out, err = run_study(tmp_path, tracking_uri, experiment)
    assert status == 0 and "6 finished earlier, 0 to run" in out, err
    assert len(list((tmp_path / "ddpx-runs" / "studies").glob("two_sets-*"))) == 2


ONE_SET = f"""\
name = "one_set"
seeds = [0, 1]

[sets.easy]
overrides = ["train.max_epochs=2", "train.stop_check_every=1", "dataset.train_size=3000"]  # epochs of ~90 steps

[[sets.easy.candidates]]
recipe = "{TINY}"
name = "wide"
"""


@pytest.mark.slow
def test_a_stop_on_request_ends_the_study_after_its_run_which_the_same_command_continues(tmp_path):
    """SIGUSR1 (a preemption notice) to the study while its first run trains: that run checkpoints at
    its next step, no other run starts, the study ends with exit 75 saying how it goes on, and the
    same command continues that run from its checkpoint."""
    (tmp_path / "s.toml").write_text(ONE_SET)
    command = [
        sys.executable,
        "-m",
        "ddpx",
        "study",
        "run",
        "s.toml",
        "--tracking",
        "none",
        "--nproc",
        "1",
        "--parallel",
        "1",
    ]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out = ""
    for line in process.stdout:  # the first run's first epoch ended: it trains its second
        out += line
        if line.startswith("epoch 1/2"):
            process.send_signal(signal.SIGUSR1)
            break
    rest, err = process.communicate(timeout=180)
    out += rest
    assert process.returncode == 75, err
    assert "the study was stopped on request (SIGUSR1)" in err and "Traceback" not in err, err
    assert "a run that stopped from its checkpoint: ddpx study run s.toml" in err
    assert re.search(
        r"ddpx: run 1 \(.*\): FAILED: the run stopped on request (after epoch 1|\d+ step\(s\) into epoch 2);", out
    ), out
    assert "--resume auto" not in out + err  # the study goes on; `ddpx recipe --resume` would train that run alone
    [stopped] = (tmp_path / "ddpx-runs").glob("tiny_mlp-*")  # no run started after the request
    assert (stopped / "checkpoints" / "last.pt").is_file() and not (stopped / "summary.json").is_file()

    again = subprocess.run(command, cwd=tmp_path, env=environment(), capture_output=True, text=True, timeout=180)
    assert again.returncode == 0, again.stderr
    assert "0 finished earlier, 2 to run (1 from where they were cut off)" in again.stdout
    assert f"ddpx: resuming the run in {stopped}" in again.stdout and "set easy: chose wide" in again.stdout
    assert re.search(r"resuming from .*last\.pt: 1 epoch\(s\) done", again.stdout), again.stdout
    assert len(list((tmp_path / "ddpx-runs").glob("tiny_mlp-*"))) == 2


def _events(folder: Path) -> list[dict]:
    return _lines(folder / "events.jsonl")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _averaged_accuracy(run_dirs: list[str]) -> float:
    """The accuracy of the runs' class probabilities averaged sample by sample, from their
    ``reports/heldout_predictions.csv`` (the MLP's form: target, predicted, probability_<class>...)."""
    tables = [list(csv.DictReader((Path(d) / "reports" / "heldout_predictions.csv").open())) for d in run_dirs]
    classes = [name for name in tables[0][0] if name.startswith("probability_")]
    mean = np.mean([[[float(row[c]) for c in classes] for row in table] for table in tables], axis=0)
    return float(np.mean(mean.argmax(axis=1) == [int(row["target"]) for row in tables[0]]))


def test_the_moleculenet_study_declares_runnable_candidates():
    from ddpx.config.recipe import resolve_recipe
    from ddpx.plugin_host.registry import load_registry

    spec = read_study(ROOT / "benchmarks" / "studies" / "moleculenet.toml")
    registry = load_registry()
    assert [s.name for s in spec.sets] == ["bbbp", "bace", "clintox", "esol", "lipophilicity", "sider", "tox21", "hiv"]
    assert spec.seeds == (0, 1, 2, 3, 4)
    for study_set in spec.sets:
        assert set(study_set.published) == {"D-MPNN (GEM)", "Uni-Mol"}
        assert study_set.ensembles == ("seeds",)  # the default: the file says nothing of ensembles
        for candidate in study_set.candidates:
            recipe = resolve_recipe(registry, candidate.recipe, study_set.overrides_of(candidate, 0))
            assert recipe.config["dataset"]["path"].endswith(Path(study_set.data).name)
            assert recipe.config["dataset"]["split"] == "scaffold"


def test_the_pretraining_study_compares_fine_tuned_candidates_with_the_same_recipe_from_scratch():
    """Its sets and seeds are the MoleculeNet study's; each set's baseline is its graph recipe from scratch, and
    every other candidate is that recipe starting from the registered MOSES encoder."""
    from ddpx.config.recipe import resolve_recipe
    from ddpx.plugin_host.registry import load_registry

    studies = ROOT / "benchmarks" / "studies"
    spec, moleculenet = read_study(studies / "pretraining.toml"), read_study(studies / "moleculenet.toml")
    assert [s.name for s in spec.sets] == [s.name for s in moleculenet.sets] and spec.seeds == moleculenet.seeds
    registry = load_registry()
    for study_set, same in zip(spec.sets, moleculenet.sets):
        assert (study_set.data, study_set.overrides, study_set.published) == (same.data, same.overrides, same.published)
        (baseline,) = [c for c in study_set.candidates if c.name == study_set.baseline]
        assert baseline.recipe == f"{study_set.name}_dmpnn" and baseline.overrides == ()
        for candidate in study_set.candidates:
            recipe = resolve_recipe(registry, candidate.recipe, study_set.overrides_of(candidate, 0))
            encoder = "" if candidate is baseline else "models:/moses_pretrain_dmpnn/1"
            assert recipe.config["model"]["encoder_from"] == encoder and candidate.recipe == baseline.recipe
            assert recipe.config["dataset"]["split"] == "scaffold"
        assert len(study_set.contenders) == (1 if study_set.name == "hiv" else 2)


def test_a_study_runs_as_many_at_once_as_the_machine_affords(ddpx_here, tmp_path):
    (tmp_path / "s.toml").write_text(STUDY)
    cores = len(os.sched_getaffinity(0))
    one_rank = ddpx_here("study", "run", "s.toml", "--dry-run", "--nproc", "1", "--tracking", "none")
    assert one_rank.returncode == 0, one_rank.output
    assert (f"on 1 rank(s) each, {cores} at once;" if cores > 1 else "on 1 rank(s) each;") in one_rank.output
    every_core = ddpx_here("study", "run", "s.toml", "--dry-run", "--nproc", str(cores), "--tracking", "none")
    assert f"on {cores} rank(s) each;" in every_core.output  # a core per rank: one run at a time
    bad = ddpx_here("study", "run", "s.toml", "--dry-run", "--parallel", "many")
    assert bad.returncode == 2 and "neither auto nor a whole number" in bad.output
