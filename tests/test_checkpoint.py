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


def test_a_restart_whose_rank_0_moved_continues_from_the_newest_checkpoint_any_machine_knows(tmp_path):
    """After an elastic restart rank 0 may be on another machine, whose run folder has no (or an
    older) ``last.pt``: each machine offers its own and those its note (``rank0.json``) names, the
    folder the earlier rank 0 wrote to and the checkpoint that start continued from; the newest wins."""
    import os
    from types import SimpleNamespace

    from ddpx.contract.run_dir import RunDir
    from ddpx.rank.checkpoints.resume import note_rank0_folder, offered_checkpoints, resume_source

    a, b, c = (RunDir(tmp_path / name) for name in "abc")  # three machines' run folders, on shared storage
    for folder in (a, b, c):
        folder.checkpoints.mkdir(parents=True)
    machine = {folder: SimpleNamespace(run_dir=folder, resume_from=None) for folder in (a, b, c)}

    def offers(*folders):  # every machine's offers, gathered
        return [offer for folder in folders for offer in offered_checkpoints(machine[folder])]

    note_rank0_folder(machine[a], a.path, None)  # rank 0's own machine: nothing to note
    assert not a.rank0_file.exists() and resume_source(machine[a], offers(a, b, c)) is None
    for other in (b, c):
        note_rank0_folder(machine[other], a.path, None)  # A is rank 0; B and C note its folder
    save_checkpoint(a.last_checkpoint, {"epoch": 3})
    # A leaves; B becomes rank 0 and continues from A's checkpoint, which C notes as the source
    assert resume_source(machine[b], offers(b, c)) == a.last_checkpoint
    note_rank0_folder(machine[c], b.path, str(a.last_checkpoint))
    # B leaves before its first checkpoint: C still finds A's
    assert resume_source(machine[c], offers(c)) == a.last_checkpoint
    save_checkpoint(c.last_checkpoint, {"epoch": 4})
    os.utime(a.last_checkpoint, ns=(1, 1))
    assert resume_source(machine[c], offers(c)) == c.last_checkpoint  # its own, now the newest
    # a late machine D with no checkpoint and no note becomes rank 0: the others' offers count
    d = RunDir(tmp_path / "d")
    d.checkpoints.mkdir(parents=True)
    assert resume_source(SimpleNamespace(run_dir=d, resume_from=None), offers(c)) == c.last_checkpoint
    c.rank0_file.write_text('{"run_dir": null}')  # a note that cannot be read names nothing
    assert offered_checkpoints(machine[c]) == [(c.last_checkpoint.stat().st_mtime_ns, str(c.last_checkpoint))]
    given = SimpleNamespace(run_dir=d, resume_from=str(tmp_path / "given.pt"))
    assert resume_source(given, []) == tmp_path / "given.pt"  # nothing written yet: --resume PATH


def test_a_note_that_cannot_be_written_is_a_warning(tmp_path):
    from types import SimpleNamespace

    from ddpx.contract.run_dir import RunDir
    from ddpx.rank.checkpoints.resume import note_rank0_folder

    gone = SimpleNamespace(run_dir=RunDir(tmp_path / "removed"), resume_from=None)
    with pytest.warns(UserWarning, match="could not note rank 0's run folder"):
        note_rank0_folder(gone, tmp_path / "rank0", None)
    assert not (tmp_path / "removed").exists()


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
