"""Bad input, table-driven: the real CLI on each mistake gives one clear message naming the fix,
a non-zero exit code (2 for what is caught before launch), no traceback, no orphan process, and
in MLflow either no run (caught before launch) or one run marked FAILED with the error. Mistakes
caught before launch run the CLI in this process; one of each kind, and every case that starts
ranks or fills a disk, run the ``ddpx`` command in a new one."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import TEST_RECIPES, orphans
from image_files import write_idx, write_mnist
from mlflow.tracking import MlflowClient
from smiles_files import write_smiles_csv

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


@dataclass
class Case:
    args: list[str]
    fragment: str  # the message names the problem and the fix
    exit_code: int = 2
    failed_run: bool = False  # True: a launched job, recorded in MLflow as FAILED
    files: Callable[[Path], None] = lambda folder: None
    env: dict = field(default_factory=dict)  # "{folder}" in a value: the case's folder
    own_store: bool = False  # the case gives its own --tracking-uri
    full_disk: bool = False  # a full disk (a tmpfs left with no free byte) is mounted at ./disk
    needs: str = ""  # a module the case's model needs to get as far as its message (chemprop)


def _write(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes(data)


def _smiles(name: str, **kwargs) -> Callable[[Path], None]:
    return lambda folder: write_smiles_csv(folder / name, **kwargs)


def _one_class(folder: Path) -> None:
    rows = ["num,name,p_np,smiles"] + [f"{i},m{i},1,C{'C' * (i % 7)}O" for i in range(60)]
    (folder / "one_class.csv").write_text("\n".join(rows) + "\n")


def _mnist_cut(folder: Path) -> None:
    raw = write_mnist(folder / "images", n_train=60, n_test=20) / "MNIST" / "raw"
    images = raw / "train-images-idx3-ubyte"
    images.write_bytes(images.read_bytes()[:-100])


def _mnist_label_12(folder: Path) -> None:
    raw = write_mnist(folder / "images", n_train=60, n_test=20) / "MNIST" / "raw"
    write_idx(raw / "train-labels-idx1-ubyte", np.where(np.arange(60) % 10 == 9, 12, np.arange(60) % 10))


@contextmanager
def full_disk(folder: Path):
    """A real full disk at ``folder``: a small tmpfs, filled to its last byte (mounting needs root)."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a small tmpfs needs root (CI runs as root): {mounted.stderr.strip()}")
    try:
        with open(folder / "filler", "wb", buffering=0) as out:
            try:
                while out.write(bytes(4096)):
                    pass
            except OSError:  # ENOSPC: full
                pass
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def _checkpoints(folder: Path) -> None:
    (folder / "corrupt.pt").write_bytes(b"PK\x03\x04 not really a checkpoint")
    torch.save({"weights": torch.zeros(3)}, folder / "foreign.pt")
    other = {"name": "mlp", "n_layers": 3, "dim_hidden": 16}  # tiny_mlp's model is 64 wide
    torch.save({"model": {"net.0.weight": torch.zeros(16, 64)}, "recipe": {"model": other}}, folder / "other_model.pt")

    class Payload:
        def __reduce__(self):
            return (print, ("arbitrary code ran",))

    torch.save({"model": Payload()}, folder / "pickled.pt")


BBBP = ["recipe", "bbbp_rnn", "train.max_epochs=1"]
OWN_CSV = ["recipe", "smiles_csv_rnn", "train.max_epochs=1", "dataset.label_column=y"]
MEASURED = b"smiles,y\n" + b"".join(f"{'C' * (i % 6 + 1)}O,{-1.25 - 0.5 * (i % 6):.2f}\n".encode() for i in range(30))
WIDE = (
    "id,SMILES_in,y,"
    + ",".join(f"d{i}" for i in range(300))
    + "\n"
    + "".join(f"{i},C{'C' * (i % 5)}O,{i % 2}," + ",".join("0.5" for _ in range(300)) + "\n" for i in range(40))
).encode()
RARE_CLASS = (
    "smiles,y\n" + "".join(f"C{'C' * (i % 7)}O,{('CA', 'CI', 'CM')[min(i, 1 + i % 2)]}\n" for i in range(60))
).encode()
TWO_COLUMNS = ("smiles,y,z\n" + "".join(f"C{'C' * (i % 7)}O,{i % 3},{i % 2}\n" for i in range(60))).encode()
LONE_ACTIVE = ("smiles,y\n" + "".join(f"C{'C' * (i % 7)}O,{int(i > 0)}\n" for i in range(60))).encode()
NUL_NAME = b'name = "tiny\\u0000x"\ntask = "mlp_synthetic"\n[model]\nname = "mlp"\n'
CASES = {
    # values of the right type that mean nothing: the general rules every key gets, and declared bounds
    "nan lr": Case(["recipe", TINY, "train.lr=nan"], "'train.lr' must be a finite number, not nan"),
    "infinite weight decay": Case(["recipe", TINY, "train.weight_decay=inf"], "'train.weight_decay' must be a finite"),
    "fraction above one": Case(["recipe", TINY, "dataset.label_noise=1.5"], "'dataset.label_noise' must be at most 1"),
    "split fraction of one": Case(
        [*BBBP, "dataset.heldout_fraction=1"], "'dataset.heldout_fraction' must be less than 1"
    ),
    "seed beyond 32 bits": Case(
        ["recipe", TINY, "train.seed=18446744073709551617"], "'train.seed' must be at most 4294967295"
    ),
    "integer beyond 64 bits": Case(["recipe", TINY, "dataset.train_size=1" + "0" * 30], "does not fit in 64 bits"),
    "batch larger than each rank's share": Case(
        ["recipe", TINY, "dataset.train_size=100", "train.batch_size=64"],
        "train.batch_size=64 is larger than each rank's share",
    ),
    "nan timeout": Case(["recipe", TINY, "--timeout", "nan"], "--timeout must be a positive, finite number"),
    "infinite timeout": Case(["recipe", TINY, "--timeout", "inf"], "--timeout must be a positive, finite number"),
    "negative stall report": Case(["recipe", TINY, "--stall-report", "-1"], "--stall-report must be 0 (never) or"),
    # several labels
    "label columns not a list": Case(
        ["recipe", "clintox_rnn", "dataset.label_columns=CT_TOX"], "'dataset.label_columns' must be a list of text"
    ),
    "a label column without labels": Case(
        ["recipe", "clintox_rnn", "dataset.path=clintox.csv"],
        "label column 'CT_TOX' of",
        files=_write("clintox.csv", b"smiles,FDA_APPROVED,CT_TOX\nCCO,1,\nCCCl,0,NaN\n"),
    ),
    # names that would become paths out of the run folder
    "name with ../": Case(["recipe", TINY, "name=../../escaped"], "'name' cannot be '../../escaped'"),
    "absolute name": Case(["recipe", TINY, "name=/tmp/escaped"], "a path separator or a leading '.'"),
    "300-character name": Case(["recipe", TINY, "name=" + "n" * 300], "it is 300 characters long"),
    "NUL byte in a name": Case(
        ["recipe", "nul.toml"], "'name' contains the control character", files=_write("nul.toml", NUL_NAME)
    ),
    "file url for a download": Case(
        [*BBBP, "dataset.download=true", "dataset.url=file:///etc/passwd"],
        "'dataset.url' must be a http:// or https:// address",
    ),
    # tracking that silently would not be
    "unknown tracking scheme": Case(
        ["recipe", TINY, "--tracking-uri", "sqlit:///mlflow.db"],
        "cannot store runs at a 'sqlit://' address",
        own_store=True,
    ),
    "tracking server that does not answer": Case(
        ["recipe", TINY, "--tracking-uri", "http://127.0.0.1:9"],
        "no MLflow server answers at http://127.0.0.1:9",
        own_store=True,
    ),
    "sqlite store in a missing folder": Case(
        ["recipe", TINY, "--tracking-uri", "sqlite:////nonexistent/ddpx/m.db"],
        "the folder /nonexistent/ddpx does not exist",
        own_store=True,
    ),
    "sqlite store that cannot be written": Case(
        ["recipe", TINY, "--tracking-uri", "sqlite:////proc/ddpx.db"], "nothing can be written in /proc", own_store=True
    ),
    # run folders that cannot be made
    "run folder under a file": Case(
        ["recipe", TINY, "--run-dir", "taken/runs"],
        "cannot create the run folder",
        files=_write("taken", b"a file, not a folder"),
    ),
    "unknown recipe": Case(["recipe", "no_such_recipe"], "unknown recipe 'no_such_recipe'. Available:"),
    "unknown task": Case(["recipe", TINY, "task=no_such_task"], "unknown task 'no_such_task'"),
    "unknown launcher": Case(["recipe", TINY, "--launcher", "mpirun"], "unknown launcher 'mpirun'"),
    "unknown backend": Case(["recipe", TINY, "--backend", "mpi"], "unknown backend 'mpi'"),
    "unknown wrapper": Case(["recipe", TINY, "train.wrapper=zero3"], "unknown wrapper 'zero3'"),
    "sync check of shards": Case(
        ["recipe", TINY, "train.wrapper=fsdp", "train.check_sync=true"], "each rank holds only its shard"
    ),
    "compiled shards": Case(["recipe", TINY, "train.wrapper=fsdp", "train.compile=true"], "Set train.compile=false"),
    "unknown plugin": Case(["plugins", "check", "no_such_plugin"], "no plugin or distribution called 'no_such_plugin'"),
    "unknown key": Case(["recipe", TINY, "train.lrr=0.1"], "Did you mean 'train.lr'?"),
    "mistyped value": Case(["recipe", TINY, "train.lr=fast"], "'train.lr' must be a number, not 'fast'"),
    "zero batch size": Case(["recipe", TINY, "train.batch_size=0"], "'train.batch_size' must be at least 1"),
    "negative batch size": Case(["recipe", TINY, "train.batch_size=-8"], "'train.batch_size' must be at least 1"),
    "log scale from zero": Case(
        ["sweep", TINY, "train.lr=loguniform(0,1)", "--search", "optuna", "--trials", "2"],
        "a log scale needs LOW above 0",
    ),
    "bounds the wrong way": Case(
        ["sweep", TINY, "model.n_layers=int(3,1)", "--search", "optuna", "--trials", "2"],
        "LOW (3) is above HIGH (1); write int(1,3)",
    ),
    "unknown distribution": Case(
        ["sweep", TINY, "train.lr=normal(0,1)", "--search", "optuna", "--trials", "2"], "unknown distribution 'normal'"
    ),
    "searched key that does not exist": Case(
        ["sweep", TINY, "train.lrr=loguniform(0.01,0.1)", "--search", "optuna", "--trials", "2"],
        "Did you mean 'train.lr'?",
    ),
    "search value out of range": Case(
        ["sweep", TINY, "train.momentum=uniform(0.5,1.5)", "--search", "optuna", "--trials", "2"],
        "'train.momentum' must be less than 1",
    ),
    "search without trials": Case(
        ["sweep", TINY, "train.lr=loguniform(0.01,0.1)", "--search", "optuna"], "needs --trials N"
    ),
    "negative pruner warm-up": Case(
        [
            "sweep",
            TINY,
            "train.lr=loguniform(0.01,0.1)",
            "--search",
            "optuna",
            "--trials",
            "2",
            "--pruner-warmup",
            "-1",
        ],
        "--pruner-warmup must be 0 or more epochs",
    ),
    "search space in a grid sweep": Case(["sweep", TINY, "train.lr=loguniform(0.01,0.1)"], "add --search optuna"),
    # machines: a node range is torchrun's elastic mode, and needs restarts to survive a departure
    "node range for spawn": Case(["recipe", TINY, "--nnodes", "1:2"], "only a launcher that re-forms the job"),
    "node range upside down": Case(
        ["recipe", TINY, "--launcher", "torchrun", "--nnodes", "3:1"], "a range MIN:MAX needs 1 <= MIN <= MAX, not 3:1"
    ),
    "node count in words": Case(["recipe", TINY, "--nnodes", "two"], "--nnodes takes a number of machines (2)"),
    "elastic without restarts": Case(
        ["recipe", TINY, "--launcher", "torchrun", "--nnodes", "1:2", "--rdzv-endpoint", "127.0.0.1:29400"],
        "give --max-restarts the number of departures",
    ),
    "elastic shards": Case(
        ["recipe", TINY, "--launcher", "torchrun", "--nnodes", "1:2", "train.wrapper=fsdp"],
        "use train.wrapper=ddp for an elastic job",
    ),
    "unknown rendezvous setting": Case(
        ["recipe", TINY, "--launcher", "torchrun", "--rdzv-conf", "timeout=5"], "--rdzv-conf takes KEY=SECONDS pairs"
    ),
    "store host in other words": Case(
        ["recipe", TINY, "--launcher", "torchrun", "--rdzv-conf", "last_call_timeout=5,is_host=yes"],
        "and is_host=true or false",
    ),
    "no trials at once": Case(["sweep", TINY, "train.lr=0.05,0.1", "--parallel", "0"], "--parallel must be at least 1"),
    "parallel trials on one port": Case(
        ["sweep", TINY, "train.lr=0.05,0.1", "--parallel", "2", "--master-port", "29533"],
        "each on a free port of its own: leave out --master-port",
    ),
    "zero accumulation": Case(["recipe", TINY, "train.accumulate=0"], "'train.accumulate' must be at least 1"),
    "negative clipping norm": Case(
        ["recipe", TINY, "train.clip_grad_norm=-1"], "'train.clip_grad_norm' must be at least 0"
    ),
    "two warm-ups": Case(
        ["recipe", TINY, "train.warmup_steps=5", "train.warmup_fraction=0.1"], "keep one and set the other to 0"
    ),
    "warm-up with onecycle": Case(
        ["recipe", TINY, "train.lr_schedule=onecycle", "train.warmup_steps=5"], "onecycle warms up by itself"
    ),
    "unknown schedule": Case(["recipe", TINY, "train.lr_schedule=linear"], "unknown schedule 'linear'"),
    "zero lr": Case(["recipe", TINY, "train.lr=0"], "'train.lr' must be greater than 0"),
    "negative lr": Case(["recipe", TINY, "train.lr=-0.1"], "'train.lr' must be greater than 0"),
    "zero nproc": Case(["recipe", TINY, "--nproc", "0"], "--nproc must be at least 1"),
    "negative nproc": Case(["recipe", TINY, "--nproc", "-2"], "--nproc must be at least 1"),
    "more ranks than samples": Case(
        ["recipe", TINY, "dataset.train_size=2", "--nproc", "3"], "fewer training samples than the job's 3 ranks"
    ),
    "nccl without GPUs": Case(["recipe", TINY, "--backend", "nccl"], "Use --backend gloo"),
    "malformed recipe file": Case(
        ["recipe", "broken.toml"],
        "is not valid TOML",
        files=_write("broken.toml", b'name = "x"\ntask = "mlp_synthetic\n'),
    ),
    "missing dataset file": Case([*BBBP, "dataset.path=absent.csv"], "does not exist"),
    "empty dataset file": Case([*BBBP, "dataset.path=empty.csv"], "is empty", files=_write("empty.csv", b"")),
    "binary dataset file": Case(
        [*BBBP, "dataset.path=blob.csv"], "is not UTF-8 text", files=_write("blob.csv", bytes(range(256)) * 8)
    ),
    "truncated image file": Case(["recipe", "mnist_convnet", "dataset.root=images"], "is truncated", files=_mnist_cut),
    "csv without the label column": Case(
        [*BBBP, "dataset.path=m.csv", "dataset.label_column=bbb"], "has no column 'bbb'", files=_smiles("m.csv", n=40)
    ),
    "wide csv without its smiles column": Case(
        [*OWN_CSV, "dataset.path=wide.csv"],
        "has no column 'smiles'. Did you mean 'SMILES_in'? Its columns are: id, "
        "SMILES_in, y, d0, d1, d2, d3, d4, d5, d6, d7, d8 (and 291 more). Set dataset.smiles_column.",
        files=_write("wide.csv", WIDE),
    ),
    "csv with one class only": Case([*BBBP, "dataset.path=one_class.csv"], "has only label 1", files=_one_class),
    # molecule features go beside a graph: a token model cannot take them; a featurizer Chemprop has not
    "molecule features for a token model": Case(
        [*BBBP, "dataset.molecule_features=rdkit_2d"],
        "this recipe's model reads smiles_tokens, not graphs. Use a graph model",
    ),
    "unknown molecule featurizer": Case(
        [*BBBP, "dataset.molecule_features=morgan_count+rdkit_3d"],
        "'rdkit_3d' is not one of Chemprop's molecule featurizers (did you mean "
        "'rdkit_2d'?). Use v1_rdkit_2d_normalized",
    ),
    "featurizer named twice": Case(
        [*BBBP, "dataset.molecule_features=morgan_count+morgan_count"], "names morgan_count twice"
    ),
    "enumeration for a graph model": Case(
        ["recipe", "bbbp_dmpnn", "dataset.enumerate=4"],
        "this recipe's model reads molecule_graph, which is the same however the SMILES is written",
        needs="chemprop",
    ),
    "features model without features": Case(
        ["recipe", "bbbp_ffn", "dataset.molecule_features=none"],
        "reads molecule-level features only, and dataset.molecule_features=none gives it none. Name them",
        needs="chemprop",
    ),
    # data in the right format but the wrong range or size: seen before launch, not in a training step
    "image label out of range": Case(
        ["recipe", "mnist_convnet", "dataset.root=images"],
        "holds label(s) 12, outside the task's 10 classes",
        files=_mnist_label_12,
    ),
    "images too few for the dev split": Case(
        ["recipe", "mnist_convnet", "dataset.root=images"],
        "holds 60 training images, too few for a stratified dev split",
        files=lambda folder: write_mnist(folder / "images", n_train=60, n_test=20),
    ),
    "csv too small for its split": Case(
        [*OWN_CSV, "dataset.path=three.csv"],
        "has 3 molecules, only 1 of them with label 0",
        files=_write("three.csv", b"smiles,y\nCCO,1\nCCCl,0\nCCN,1\n"),
    ),
    "csv with one molecule of a class": Case(
        [*OWN_CSV, "dataset.path=lone.csv"],
        "Add molecules with label 0 (at least 10",
        files=_write("lone.csv", LONE_ACTIVE),
    ),
    # several classes the file cannot train
    "csv with a class too rare for its split": Case(
        [*OWN_CSV, "dataset.path=rare.csv"],
        "only 1 of them with label 'CA': too few for a stratified random split",
        files=_write("rare.csv", RARE_CLASS),
    ),
    "csv with one word for its classes": Case(
        [*OWN_CSV, "dataset.path=word.csv"],
        "has 1 different label(s) in 'y' (active); a label column of a classification task holds two classes or more",
        files=_write("word.csv", b"smiles,y\n" + b"".join(b"C%sO,active\n" % (b"C" * (i % 5)) for i in range(30))),
    ),
    "several classes among several label columns": Case(
        [*OWN_CSV[:-1], 'dataset.label_columns=["y", "z"]', "dataset.path=two.csv"],
        "column 'y' of 'two.csv' holds 3 classes (0, 1, 2), and with several label columns each holds two",
        files=_write("two.csv", TWO_COLUMNS),
    ),
    # a user's own file declared as what it is not
    "measurements declared classification": Case(
        [*OWN_CSV, "dataset.path=logs.csv"],
        "measurements, not classes. Train on them as a regression",
        files=_write("logs.csv", MEASURED),
    ),
    "classes declared regression": Case(
        [*OWN_CSV, "dataset.path=m.csv", "dataset.label_column=p_np", "dataset.task_type=regression"],
        "holds only 0 and 1: classes, not measurements. Set dataset.task_type=classification",
        files=_smiles("m.csv", n=40),
    ),
    # uncertainty keys that do not fit the task: the loss they need is not the task's
    "variance head on a classifier": Case(
        [*OWN_CSV, "dataset.path=m.csv", "dataset.label_column=p_np", "model.uncertainty=mve"],
        "adds a variance head to a regression model, and this task trains a classifier",
        files=_smiles("m.csv", n=40),
    ),
    "probability calibrator on a regression": Case(
        [*OWN_CSV, "dataset.path=logs.csv", "dataset.task_type=regression", "train.calibration=platt"],
        "calibrates the probabilities of 0/1 labels, and this run's loss 'mse' trains a regression model",
        files=_write("logs.csv", MEASURED),
    ),
    "z-scaling without a variance": Case(
        [*OWN_CSV, "dataset.path=logs.csv", "dataset.task_type=regression", "train.calibration=zscaling"],
        "Add model.uncertainty=mve (a variance head) for a regression task, or train an ensemble of it",
        files=_write("logs.csv", MEASURED),
    ),
    # a full disk: named with its folder, before launch
    "run folder on a full disk": Case(
        ["recipe", TINY, "--run-dir", "disk/runs"], "no space left on the device holding", full_disk=True
    ),
    "tracking store on a full disk": Case(
        ["recipe", TINY, "--tracking-uri", "sqlite:///disk/m.db"],
        "no space left on the device holding",
        full_disk=True,
        own_store=True,
    ),
    "corrupt checkpoint": Case(["recipe", TINY, "--resume", "corrupt.pt"], "cannot be read safely", files=_checkpoints),
    "foreign checkpoint": Case(
        ["recipe", TINY, "--resume", "foreign.pt"], "cannot resume a run: it lacks", files=_checkpoints
    ),
    "init_from of another model": Case(
        ["recipe", TINY, "train.init_from=other_model.pt"], "model.dim_hidden=16 there, 64 here", files=_checkpoints
    ),
    "checkpoint with pickled objects": Case(
        ["recipe", TINY, "train.init_from=pickled.pt"], "Unsupported global: GLOBAL print", files=_checkpoints
    ),
    "download that fails in the ranks": Case(
        [
            *BBBP,
            "--nproc",
            "1",
            "dataset.path=later.csv",
            "dataset.download=true",
            "dataset.url=http://127.0.0.1:9/BBBP.csv",
        ],
        "could not download http://127.0.0.1:9/BBBP.csv",
        exit_code=1,
        failed_run=True,
    ),
}


IN_THE_RANKS = {name for name, case in CASES.items() if case.failed_run}  # these start ranks: slow
# Caught before launch, so run in this process (the same CLI, no new interpreter's imports), except
# these, which go through a real ``python -m ddpx`` as a user's command does: one of each kind of
# check, the full disks (a traceback could come on the interpreter's way out) and the ranks' errors.
IN_A_NEW_PROCESS = {
    "unknown key",
    "missing dataset file",
    "corrupt checkpoint",
    "csv too small for its split",
    "image label out of range",
    "tracking server that does not answer",
    *(name for name, case in CASES.items() if case.full_disk or case.failed_run),
}


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if name in IN_THE_RANKS else name for name in CASES]
)
def test_bad_input(name, run_ddpx, ddpx_here, tmp_path, tracking_uri, experiment):
    case = CASES[name]
    if name == "nccl without GPUs":
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine has GPUs: nccl is not a mistake here")
    if case.needs:
        pytest.importorskip(case.needs, reason=f"the case's model needs {case.needs} to get as far as its message")
    case.files(tmp_path)
    store = [] if case.own_store else ["--tracking-uri", tracking_uri]
    tracking = [*store, "--experiment", experiment] if case.args[0] == "recipe" else []
    env = {key: value.replace("{folder}", str(tmp_path)) for key, value in case.env.items()}
    with full_disk(tmp_path / "disk") if case.full_disk else nullcontext():
        result = (run_ddpx if name in IN_A_NEW_PROCESS else ddpx_here)(*case.args, *tracking, env=env)
        left = sorted(path.name for path in (tmp_path / "disk").rglob("*")) if case.full_disk else []
    assert set(left) <= {"filler"}, f"a half-made run folder is left on the full disk: {left}"
    assert result.returncode == case.exit_code, result.output
    assert case.fragment in result.stderr, result.stderr
    assert [line.startswith("Error:") for line in result.stderr.splitlines()].count(True) == 1, result.stderr
    assert "Traceback" not in result.output, result.output
    assert orphans(result.marker) == []
    client = MlflowClient(tracking_uri)
    found = client.get_experiment_by_name(experiment)
    runs = client.search_runs([found.experiment_id]) if found else []
    if case.failed_run:
        (run,) = runs
        assert run.info.status == "FAILED" and case.fragment in run.data.tags["ddpx.error"]
    else:
        assert runs == [], "an error caught before launch must not leave a run"
        assert not (result.cwd / "ddpx-runs").exists(), "nor a run folder, nor the folder made to hold it"


def test_busy_master_port_is_refused_before_launch(ddpx_here):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = str(holder.getsockname()[1])
        for launcher in ("spawn", "torchrun"):
            result = ddpx_here("recipe", TINY, "--tracking", "none", "--launcher", launcher, "--master-port", port)
            assert result.returncode == 2, result.output
            assert f"--master-port {port} on 127.0.0.1 is already in use" in result.stderr
            assert "Traceback" not in result.output and result.run_dirs() == []


def test_mlflow_missing_is_a_clear_error_naming_tracking_none(ddpx_here, tmp_path, monkeypatch):
    """A bare machine (a GPU lent for an hour) may lack mlflow: exit 2 naming the fix, no traceback, no run."""
    monkeypatch.setitem(sys.modules, "mlflow", None)  # what `import mlflow` finds where it is not installed
    result = ddpx_here("recipe", TINY, "--tracking-uri", f"sqlite:///{tmp_path}/mlflow.db")
    assert result.returncode == 2, result.output
    assert "mlflow is not installed" in result.stderr and "--tracking none" in result.stderr
    assert "`ddpx upload RUN_DIR`" in result.stderr and "Traceback" not in result.output
    assert result.run_dirs() == [] and not (tmp_path / "mlflow.db").exists()
