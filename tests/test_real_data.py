"""The integration tests find real data where a user keeps it, before the shared folder."""

from pathlib import Path

from real_data import (
    SHARED_DATA,
    bbbp_candidates,
    esol_candidates,
    first_existing,
    has_mnist,
    mnist_candidates,
    tox21_candidates,
)


def test_the_users_data_folder_comes_first(tmp_path, monkeypatch):
    monkeypatch.setenv("DDPX_DATA_DIR", str(tmp_path))
    assert bbbp_candidates() == [tmp_path / "bbbp" / "BBBP.csv", SHARED_DATA / "bbbp" / "BBBP.csv"]
    assert mnist_candidates()[0] == tmp_path / "MNIST" / "raw"
    (tmp_path / "bbbp").mkdir()
    (tmp_path / "bbbp" / "BBBP.csv").write_text("num,name,p_np,smiles\n")
    assert first_existing(bbbp_candidates(), Path.is_file) == tmp_path / "bbbp" / "BBBP.csv"


def test_moleculenet_files_are_found_where_ddpx_downloads_them_first(tmp_path, monkeypatch):
    monkeypatch.setenv("DDPX_DATA_DIR", str(tmp_path))
    from ddpx.plugins.smiles.moleculenet import FILES  # the layout `dataset.download=true` leaves

    downloaded = {file.task: file.default_path() for file in FILES}
    assert tox21_candidates() == [downloaded["tox21"], SHARED_DATA / "moleculenet" / "tox21.csv"]
    assert esol_candidates() == [downloaded["esol"], SHARED_DATA / "moleculenet" / "ESOL_delaney-processed.csv"]


def test_mnist_counts_only_when_all_four_files_are_there(tmp_path):
    names = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    assert not has_mnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(b"")
    assert has_mnist(tmp_path)
