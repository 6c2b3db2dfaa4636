"""A run folder that no rank wrote into is removed with the folders its creation made."""

import pytest

from ddpx.contract.errors import UserError
from ddpx.contract.run_dir import RunDir


def test_a_discarded_run_folder_takes_the_folders_made_for_it_and_no_other(tmp_path):
    keep = tmp_path / "keep"
    keep.mkdir()
    first = RunDir.create("tiny", keep / "runs" / "mine")
    assert first.made == (keep / "runs").resolve() and first.path.parent == (keep / "runs" / "mine").resolve()
    first.discard()
    assert list(keep.iterdir()) == []  # the run folder, mine/ and runs/: all made for it, all gone

    first = RunDir.create("tiny", keep / "runs")
    beside = RunDir.create("tiny", keep / "runs")  # another run's folder, there by the time the first goes
    first.discard()
    assert not first.path.exists() and beside.path.is_dir() and beside.made == beside.path
    beside.discard()
    assert list(keep.iterdir()) == [keep / "runs"]  # made by the first run, which left while it held another


def test_the_default_folder_made_by_a_first_run_goes_with_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = RunDir.create("tiny")  # ./ddpx-runs, relative, as on a first run
    assert first.made == (tmp_path / "ddpx-runs").resolve()
    first.discard()
    assert list(tmp_path.iterdir()) == []


def test_folders_made_before_one_that_cannot_be_made_are_removed_with_the_error(tmp_path):
    with pytest.raises(UserError, match="cannot create the run folder .*File name too long"):
        RunDir.create("tiny", tmp_path / "made" / ("x" * 300))  # made/, then a name no file system takes
    assert list(tmp_path.iterdir()) == []
