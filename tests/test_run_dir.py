"""A run folder that no rank wrote into is removed with the folders its creation made."""

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
