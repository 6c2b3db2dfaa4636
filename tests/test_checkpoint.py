"""Checkpoints: atomic writes, safe loading, wrapper prefixes."""

import os

import pytest
import torch

from ddpx.contract.errors import UserError
from ddpx.rank.checkpoints.rank_state import restore_rng_state, rng_state
from ddpx.records.checkpoint_file import (
    load_checkpoint,
    load_model_weights,
    model_state_from,
    save_checkpoint,
    strip_wrapper_prefixes,
)


class Payload:
    pass


def test_round_trip_with_rng_state_is_safe_to_load(tmp_path):
    model = torch.nn.Linear(3, 2)
    path = tmp_path / "ckpt" / "last.pt"
    torch.manual_seed(5)
    state = {"model": model.state_dict(), "epoch": 4, "rng": rng_state(), "tracking_run_id": "abc"}
    expected_next = torch.rand(3)
    save_checkpoint(path, state)
    assert sorted(os.listdir(path.parent)) == ["last.pt"]  # the temporary file was renamed away
    loaded = load_checkpoint(path)
    assert loaded["epoch"] == 4 and loaded["tracking_run_id"] == "abc" and loaded["format"] == "ddpx-checkpoint"
    restore_rng_state(loaded["rng"])
    assert torch.equal(torch.rand(3), expected_next)


def test_pickled_objects_are_refused(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"model": {}, "payload": Payload()}, path)
    with pytest.raises(UserError, match="pickled objects"):
        load_checkpoint(path)


def test_truncated_and_missing_files_are_clear_errors(tmp_path):
    good = tmp_path / "good.pt"
    save_checkpoint(good, {"model": torch.nn.Linear(3, 2).state_dict()})
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[:50])
    with pytest.raises(UserError, match="corrupt, truncated"):
        load_checkpoint(truncated)
    with pytest.raises(UserError, match="does not exist"):
        load_checkpoint(tmp_path / "none.pt")


def test_ddp_and_compile_prefixes_are_stripped(tmp_path):
    model = torch.nn.Linear(3, 2)
    wrapped = {f"module._orig_mod.{k}": v for k, v in model.state_dict().items()}
    assert set(strip_wrapper_prefixes(wrapped)) == {"weight", "bias"}
    path = tmp_path / "plain_ddp.pt"
    torch.save(wrapped, path)  # a plain DDP script's checkpoint
    target = torch.nn.Linear(3, 2)
    load_model_weights(target, path)
    assert torch.equal(target.weight, model.weight)
    assert set(model_state_from({"format": "ddpx-checkpoint", "model": model.state_dict()})) == {"weight", "bias"}


def test_a_checkpoint_of_another_model_is_a_clear_error(tmp_path):
    path = tmp_path / "other.pt"
    save_checkpoint(path, {"model": torch.nn.Linear(5, 5).state_dict()})
    with pytest.raises(UserError, match="does not fit this model"):
        load_model_weights(torch.nn.Linear(3, 2), path)


def test_a_restart_whose_rank_0_moved_continues_from_the_newer_of_both_folders_last_pt(tmp_path, monkeypatch):
    """After an elastic restart, rank 0 may be on another machine, whose run folder has no
    ``last.pt``: the folder the earlier rank 0 wrote to, noted in this machine's ``rank0.json``
    (on storage the machines share), is used; once this machine's own is newer, its own."""
    from types import SimpleNamespace

    from ddpx.contract.run_dir import RunDir
    from ddpx.rank.checkpoints.resume import note_rank0_folder, resume_source

    here, there = RunDir(tmp_path / "here"), RunDir(tmp_path / "there")
    for folder in (here, there):
        folder.checkpoints.mkdir(parents=True)
    this_machine = SimpleNamespace(run_dir=here, resume_from=None)
    monkeypatch.setenv("LOCAL_RANK", "1")
    note_rank0_folder(this_machine, there.path)  # a machine's first local rank alone writes the note
    assert not here.rank0_file.exists()
    monkeypatch.setenv("LOCAL_RANK", "0")
    note_rank0_folder(this_machine, here.path)  # rank 0's own machine: nothing to note
    assert not here.rank0_file.exists() and resume_source(this_machine) is None
    note_rank0_folder(this_machine, there.path)
    assert resume_source(this_machine) is None  # noted, but rank 0 there wrote no checkpoint yet
    save_checkpoint(there.last_checkpoint, {"epoch": 1})
    assert resume_source(this_machine) == there.last_checkpoint
    save_checkpoint(here.last_checkpoint, {"epoch": 2})  # this machine has been rank 0 since
    os.utime(there.last_checkpoint, ns=(1, 1))
    assert resume_source(this_machine) == here.last_checkpoint
    here.rank0_file.write_text("{")  # a note that cannot be read is no note
    assert resume_source(this_machine) == here.last_checkpoint


def test_weights_sha256_hashes_names_shapes_dtypes_and_bytes_in_name_order():
    import hashlib

    from ddpx.api import weights_sha256

    weights = {"b": torch.arange(6, dtype=torch.float32).reshape(2, 3), "a": torch.tensor([1.5], dtype=torch.bfloat16)}
    expected = hashlib.sha256(
        b"a:(1,):torch.bfloat16\n"
        + bytes([0xC0, 0x3F])  # 1.5 in bfloat16, little-endian
        + b"b:(2, 3):torch.float32\n"
        + torch.arange(6, dtype=torch.float32).numpy().tobytes()
    ).hexdigest()
    assert weights_sha256(weights) == weights_sha256(dict(reversed(weights.items()))) == expected
    assert weights_sha256({**weights, "b": weights["b"].double()}) != expected  # the dtype counts
    assert weights_sha256({**weights, "b": weights["b"].reshape(3, 2)}) != expected  # the shape counts


def test_the_encoder_lineage_digest_is_the_weights_sha256_prefix():
    pytest.importorskip("chemprop")
    from ddpx.api import weights_sha256
    from ddpx.plugins.smiles.encoder_source import digest

    weights = torch.nn.Linear(4, 3).state_dict()
    assert digest(weights) == weights_sha256(weights)[:16] and len(digest(weights)) == 16
