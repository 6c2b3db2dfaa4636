"""``ddpx study``: a declared study runs, stops and goes on without rerunning what finished, chooses
on dev and records the choice before any held-out value is read, and its table regenerates from
the exported records alone."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TEST_PLUGINS, TEST_RECIPES
from mlflow.tracking import MlflowClient

from ddpx.config.study_file import read_study
from ddpx.contract.errors import UserError
from ddpx.records.study_records import RunRecord, StudyDir, choose
from ddpx.records.study_report import markdown, t_interval, verdict

TINY = TEST_RECIPES / "tiny_mlp.toml"
STUDY = f"""\
name = "two_sets"
seeds = [0, 1]

[sets.easy]
overrides = ["train.max_epochs=1", "dataset.class_sep=1.5"]
published = {{ "a paper" = 0.5 }}

[[sets.easy.candidates]]
recipe = "{TINY}"
name = "narrow"
overrides = ["model.dim_hidden=16"]

[[sets.easy.candidates]]
recipe = "{TINY}"
name = "wide"

[sets.hard]
overrides = ["train.max_epochs=1", "dataset.class_sep=0.5"]

[[sets.hard.candidates]]
recipe = "{TINY}"
name = "narrow"
overrides = ["model.dim_hidden=16"]

[[sets.hard.candidates]]
recipe = "{TINY}"
name = "wide"
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


def test_held_out_values_are_unreadable_for_a_set_without_a_recorded_choice(tmp_path):
    folder = StudyDir(tmp_path, "s", "f" * 10, "c" * 10)
    folder.create("", {})
    recorded = folder.record_choice({"other": {"chosen": None}})
    with pytest.raises(RuntimeError, match="no recorded choice"):
        recorded.heldout(record("a", 0, 0.8))
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
    ],
)
def test_a_bad_study_file_is_one_clear_error(tmp_path, text, said):
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(UserError) as caught:
        read_study(path)
    assert said in caught.value.message


def test_a_bad_key_in_any_run_is_an_error_before_anything_starts(ddpx_here, tmp_path):
    (tmp_path / "s.toml").write_text(STUDY.replace("model.dim_hidden=16", "model.dim_hiden=16"))
    result = ddpx_here("study", "run", "s.toml", "--tracking", "none")
    assert result.returncode == 2 and "model.dim_hiden" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "ddpx-runs").exists()


def environment(**extra: str) -> dict[str, str]:
    env = {**os.environ, "DDPX_LOG_MODEL": "false", "DDPX_SYSTEM_METRICS": "false", "COLUMNS": "200", **extra}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TEST_PLUGINS), env.get("PYTHONPATH")]))
    return env


def run_study(folder: Path, tracking_uri: str, experiment: str, stop_after: int | None = None, **env: str):
    """``ddpx study run`` in ``folder``; with ``stop_after`` N, SIGTERM (``kill``; Ctrl-C does the same,
    where a shell has not made the process ignore it) once N runs have ended."""
    args = [sys.executable, "-m", "ddpx", "study", "run", "s.toml", "--tracking-uri", tracking_uri]
    args += ["--experiment", experiment]
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
def test_a_study_stops_goes_on_chooses_on_dev_first_and_reports_from_its_records(tmp_path, tracking_uri, experiment):
    (tmp_path / "s.toml").write_text(STUDY)
    status, out, err = run_study(tmp_path, tracking_uri, experiment, stop_after=3)
    assert status == 130 and "goes on where it stopped" in err and "Traceback" not in err, err
    assert "heldout" not in out and "held-out" not in out  # nothing held-out shown while running
    finished = [line for line in out.splitlines() if line.startswith("ddpx: run ") and "FAILED" not in line]
    assert len(finished) == 3

    crash = {"DDPX_PLUGINS": "ddpx_testplug_failing", "DDPX_TEST_FAIL_ONCE": str(tmp_path / "crashed")}
    status, out, err = run_study(tmp_path, tracking_uri, experiment, **crash)  # the next run crashes, once
    assert "3 finished earlier, 5 to run" in out  # the three finished runs are not run again
    assert status == 1 and "1 run(s) of the study failed: " in err and "Traceback" not in err, err
    assert "--choose-with-failures" in err and "chose" not in out  # a failed run holds the choice back
    [folder] = (tmp_path / "ddpx-runs" / "studies").glob("two_sets-*")
    assert not (folder / "choice.json").exists()

    status, out, err = run_study(tmp_path, tracking_uri, experiment)
    assert status == 0, err
    assert "7 finished earlier, 1 to run" in out  # only the failed run runs again
    events = [e["event"] for e in _events(folder)]
    assert events.index("choice recorded") < events.index("choice recorded on the parent run")
    assert events.index("choice recorded on the parent run") < events.index("heldout read")
    assert "chose" in out and "| easy | accuracy |" in out

    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    [parent] = [r for r in runs if r.data.tags.get("ddpx.study") == "parent"]
    choice = json.loads((folder / "choice.json").read_text())
    assert parent.data.tags["ddpx.study.choice.easy"] == choice["easy"]["chosen"]
    nested = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    # the stopped study's parent run went on: every finished run of the three attempts is nested under it
    assert (
        sum(r.info.status == "FINISHED" for r in nested) == 8
        and parent.data.params["study.digest"] == read_study(tmp_path / "s.toml").digest
    )

    exported = tmp_path / "records.json"
    report = subprocess.run(
        [sys.executable, "-m", "ddpx", "study", "report", "s.toml", "--export", str(exported)],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    again = subprocess.run(
        [sys.executable, "-m", "ddpx", "study", "report", str(exported)],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert report == again == markdown(json.loads(exported.read_text())) and report in out

    (tmp_path / "s.toml").write_text("# edited\n" + STUDY)  # another file: another study, the runs reused
    status, out, err = run_study(tmp_path, tracking_uri, experiment)
    assert status == 0 and "8 finished earlier, 0 to run" in out, err
    assert len(list((tmp_path / "ddpx-runs" / "studies").glob("two_sets-*"))) == 2


def _events(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def test_the_moleculenet_study_declares_runnable_candidates():
    from ddpx.config.recipe import resolve_recipe
    from ddpx.plugin_host.registry import load_registry

    spec = read_study(Path(__file__).parent.parent / "benchmarks" / "studies" / "moleculenet.toml")
    registry = load_registry()
    assert [s.name for s in spec.sets] == ["bbbp", "bace", "clintox", "esol", "lipophilicity", "sider", "tox21", "hiv"]
    assert spec.seeds == (0, 1, 2, 3, 4)
    for study_set in spec.sets:
        assert set(study_set.published) == {"D-MPNN (GEM)", "Uni-Mol"}
        for candidate in study_set.candidates:
            recipe = resolve_recipe(registry, candidate.recipe, study_set.overrides_of(candidate, 0))
            assert recipe.config["dataset"]["path"].endswith(Path(study_set.data).name)
            assert recipe.config["dataset"]["split"] == "scaffold"


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
