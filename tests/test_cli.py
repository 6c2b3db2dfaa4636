"""The CLI contract: fast help, listings, and usage errors before anything starts."""

import json
import shlex
import subprocess
import sys
import time

import pytest
from conftest import run_in_terminal

HEAVY = ("torch", "mlflow", "sklearn")


def in_fresh_python(commands: list[tuple[list[str], int]], cwd=None) -> tuple[str, set[str]]:
    """Run ddpx commands, each with the exit code it must end with, in one new interpreter;
    return its output (ending with the GPU count it sees) and the heavy modules it imported."""
    code = (
        "import json, sys\n"
        "from ddpx.cli import main\n"
        "for args, expected in json.loads(sys.argv[1]):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as exc:\n"
        "        assert (exc.code or 0) == expected, (args, exc.code)\n"
        f"print('HEAVY=' + ','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
        "from ddpx.launch.gpus import local_gpu_count\n"
        "print('GPUS=%d' % local_gpu_count())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(commands)], capture_output=True, text=True, check=True, cwd=cwd
    ).stdout
    heavy = next(line for line in out.splitlines() if line.startswith("HEAVY="))[len("HEAVY=") :]
    return out, set(filter(None, heavy.split(",")))


def test_help_is_fast_and_imports_nothing_heavy():
    """The plugins' commands (``runs``, ``bench``) too: ``--help`` lists them, loading the plugins."""
    out, heavy = in_fresh_python(
        [
            (["--help"], 0),
            (["recipes"], 0),
            (["show", "mlp_synthetic"], 0),
            (["recipe", "--help"], 0),
            (["runs", "--help"], 0),
            (["bench", "collectives", "--help"], 0),
            (["predict", "--help"], 0),
        ]
    )
    assert heavy == set()
    assert "  runs " in out and "  bench " in out  # listed by `ddpx --help`
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ddpx", "--help"], capture_output=True, check=True)
    assert time.perf_counter() - start < 5  # generous: this guards against importing torch, not speed


def test_checks_before_launch_need_no_torch_on_a_machine_without_gpus(tmp_path):
    from ddpx.launch.gpus import gpu_driver_present

    if gpu_driver_present():
        pytest.skip("this machine has a GPU driver: torch is asked how many GPUs it can use")
    from image_files import write_cifar10, write_mnist
    from smiles_files import write_smiles_csv

    recipe = ["recipe", "mlp_synthetic"]
    planned = [
        "--tracking",
        "none",
        "--launcher",
        "slurm",
        "--dry-run",
    ]  # every check passed, written out, not submitted
    molecules = str(write_smiles_csv(tmp_path / "mols.csv", n=60))
    mnist, cifar = write_mnist(tmp_path / "mnist", n_train=200, n_test=20), tmp_path / "cifar"
    write_cifar10(cifar, n_per_batch=20, n_test=20)
    out, heavy = in_fresh_python(
        [
            (recipe + ["--backend", "mpi"], 2),
            (recipe + ["--nproc", "0"], 2),
            (recipe + ["train.lr=0"], 2),
            (recipe + ["--backend", "nccl"], 2),
            (recipe + planned, 0),
            # the tasks' file checks read the files themselves, without torch
            (["recipe", "bbbp_rnn", f"dataset.path={molecules}", *planned], 0),
            (["recipe", "smiles_csv_rnn", f"dataset.path={molecules}", "dataset.label_column=p_np", *planned], 0),
            (["recipe", "bbbp_rnn", "dataset.path=absent.csv", *planned], 2),
            (["recipe", "mnist_convnet", f"dataset.root={mnist}", *planned], 0),
            (["recipe", "cifar10_resnet18", f"dataset.root={cifar}", *planned], 0),
        ],
        cwd=tmp_path,
    )
    assert out.count("#SBATCH --nodes") == 5
    assert "torch" not in heavy
    import torch

    assert out.strip().splitlines()[-1] == f"GPUS={torch.cuda.device_count()}"  # the same answer torch gives


def test_recipe_help_teaches_the_options(ddpx_here):
    result = ddpx_here("recipe", "--help")
    assert result.returncode == 0
    for text in ("--launcher", "--nproc", "--backend", "--tracking-uri", "--experiment", "KEY=VALUE", "Examples:"):
        assert text in result.stdout


def test_recipes_table_and_json(ddpx_here):
    table = ddpx_here("recipes")
    assert table.returncode == 0
    for column in ("name", "task", "model", "metric", "description", "mlp_synthetic", "heldout_accuracy"):
        assert column in table.stdout
    rows = {row["name"]: row for row in json.loads(ddpx_here("recipes", "--json").stdout)}
    assert set(rows) >= {
        "mlp_synthetic",
        "bbbp_rnn",
        "mnist_convnet",
        "cifar10_resnet18",
        "bace_rnn",
        "clintox_rnn",
        "tox21_rnn",
        "sider_rnn",
        "hiv_rnn",
        "bbbp_rnn_enum",
        "esol_rnn",
        "lipophilicity_rnn",
        "freesolv_rnn",
        "smiles_csv_rnn",
    }
    assert {"task": "esol", "model": "smiles_rnn", "metric": "heldout_rmse"}.items() <= rows["esol_rnn"].items()
    assert {"task": "mlp_synthetic", "model": "mlp", "metric": "heldout_accuracy"}.items() <= rows[
        "mlp_synthetic"
    ].items()
    assert {"task": "bbbp", "model": "smiles_rnn", "metric": "heldout_roc_auc"}.items() <= rows["bbbp_rnn"].items()


def table_in_terminal(args: list[str], folder, columns: int, last_column: str) -> tuple[str, list[str], str]:
    """``ddpx ARGS`` in a terminal ``columns`` wide: what it printed, its lines (none wider than the
    terminal), and the table's header line (the one naming ``last_column``)."""
    text = run_in_terminal(args, folder, columns=columns)
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= columns for line in lines), text
    return text, lines, next(line for line in lines if "name" in line and last_column in line)


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_recipes_table_fits_the_terminal_with_whole_words(tmp_path, columns):
    text, _, header = table_in_terminal(["recipes"], tmp_path, columns, "description")
    assert ("task" in header and "model" in header) == (columns >= 110), header  # narrow: the description's room
    assert "bbbp_rnn_enum" in text and "heldout_roc_auc" in text
    assert "descripti" not in text.replace("description", ""), "no word is cut"


def test_show_prints_the_resolved_recipe(ddpx_here):
    result = ddpx_here("show", "mlp_synthetic", "train.lr=0.05")
    assert result.returncode == 0
    assert "lr = 0.05" in result.stdout and 'precision = "fp32"' in result.stdout
    assert "[dataset]" in result.stdout and "[model]" in result.stdout and "[train]" in result.stdout


def test_plugins_lists_every_builtin_with_what_it_registers(ddpx_here):
    report = json.loads(ddpx_here("plugins", "--json").stdout)
    by_name = {p["name"]: p for p in report["plugins"]}
    assert by_name["spawn"]["registers"] == {"launchers": ["spawn"]}
    assert by_name["spawn"]["distribution"] == "ddpx" and by_name["spawn"]["version"]
    assert by_name["mlp_synthetic"]["registers"] == {
        "tasks": ["mlp_synthetic"],
        "models": ["mlp"],
        "recipes": ["mlp_synthetic"],
    }
    assert "register_backends" in by_name["backends"]["hooks"]
    assert report["errors"] == []
    piped = ddpx_here("plugins").stdout  # one wide page: every column, each row on one line
    header = next(line for line in piped.splitlines() if "name" in line and "registers" in line)
    assert [cell.strip() for cell in header.strip("┃ ").split("┃")] == [
        "name",
        "distribution",
        "version",
        "hooks",
        "registers",
    ]
    spawn = next(line for line in piped.splitlines() if line.startswith("│ spawn "))
    assert "register_launchers" in spawn and "launchers: spawn" in spawn


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_plugins_table_fits_the_terminal_with_whole_words(tmp_path, columns):
    text, lines, header = table_in_terminal(["plugins"], tmp_path, columns, "registers")
    assert ("hooks" in header and "version" in header) == (columns >= 120), header  # narrow: room for the rest
    cells = " ".join(line.strip("│ ") for line in lines if line.startswith("│"))
    words = set(cells.replace(",", " ").replace(";", " ").split())
    registered = {"torchrun", "mlp_synthetic", "length_bucketed", "allreduce", "onecycle"}
    assert registered <= words, "a name is never cut in two"
    if columns >= 120:
        assert {"register_launchers", "ddpx_resolve_backend", "register_commands"} <= words
    else:
        assert "Each plugin's version and hooks: `ddpx plugins --json`" in text


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["recipe", "mlp_synthtic"], "unknown recipe 'mlp_synthtic'. Did you mean 'mlp_synthetic'?"),
        (["recipe", "mlp_synthetic", "train.lrr=1"], "unknown recipe key 'train.lrr'. Did you mean 'train.lr'?"),
        (["recipe", "mlp_synthetic", "train.lr=fast"], "'train.lr' must be a number"),
        (["recipe", "mlp_synthetic", "train.batch_size=0"], "'train.batch_size' must be at least 1"),
        (["recipe", "mlp_synthetic", "train.lr=-1"], "'train.lr' must be greater than 0"),
        (["recipe", "mlp_synthetic", "lr"], "write KEY=VALUE"),
        (["recipe", "mlp_synthetic", "--launcher", "srun"], "unknown launcher 'srun'"),
        (["recipe", "mlp_synthetic", "--backend", "mpi"], "unknown backend 'mpi'"),
        (["recipe", "mlp_synthetic", "--backend", "nccl"], "nccl needs GPUs"),
        (["recipe", "mlp_synthetic", "--tracking", "wandb"], "unknown tracker 'wandb'"),
        (["recipe", "mlp_synthetic", "--nproc", "0"], "--nproc must be at least 1"),
        (["recipe", "mlp_synthetic", "train.precision=fp16"], "fp16 needs a GPU"),
        (["recipe", "mlp_synthetic", "--nnodes", "2"], "needs --master-port"),
        (["recipe", "mlp_synthetic", "--launcher", "torchrun", "--nnodes", "2"], "needs --rdzv-endpoint"),
        (["recipe", "no/such/file.toml"], "does not exist"),
    ],
)
def test_user_errors_are_one_message_and_exit_2_before_launch(ddpx_here, args, fragment):
    if "nccl" in args or "train.precision=fp16" in args:
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine has a GPU: nccl and fp16 are not mistakes here")
    result = ddpx_here(*args)
    assert result.returncode == 2, result.output
    assert fragment in result.stderr
    assert "Traceback" not in result.output
    assert result.stderr.count("Error:") == 1
    assert not (result.cwd / "ddpx-runs").exists() and not (result.cwd / "mlflow.db").exists()


def test_cp_copies_a_recipe_to_edit_and_run(ddpx_here, tmp_path):
    copied = ddpx_here("cp", "mlp_synthetic", "mine.toml")
    assert copied.returncode == 0, copied.output
    text = (tmp_path / "mine.toml").read_text()
    assert "# A synthetic 32-class problem" in text  # the file itself, comments included
    (tmp_path / "mine.toml").write_text(text.replace("max_epochs = 8", "max_epochs = 2"))
    shown = ddpx_here("show", "mine.toml")
    assert shown.returncode == 0 and "max_epochs = 2" in shown.stdout
    again = ddpx_here("cp", "mlp_synthetic", "mine.toml")
    assert again.returncode == 2 and "already exists" in again.stderr and "--force" in again.stderr
    assert ddpx_here("cp", "mlp_synthetic", "mine.toml", "--force").returncode == 0
    assert ddpx_here("cp", "mlp_synthetic", "mine.txt").returncode == 2


def help_examples(ddpx_here, command: str) -> list[list[str]]:
    """The example command lines in `ddpx COMMAND --help`."""
    text = ddpx_here(command, "--help").stdout.replace("\\\n", " ")  # a continued line is one command
    return [
        shlex.split(line.split("#")[0])[1:] for line in text.splitlines() if line.strip().startswith(f"ddpx {command} ")
    ]


def test_every_example_in_the_help_names_real_recipe_keys(ddpx_here):
    examples = help_examples(ddpx_here, "recipe") + help_examples(ddpx_here, "sweep")
    assert len(examples) >= 8
    for words in examples:
        _, name, *rest = [word.strip() for word in words]
        if name.endswith(".toml"):
            continue
        if "--search" in rest:  # a search: checked whole, every key at every bound, nothing started
            checked = ddpx_here(*words, "--dry-run")
            assert checked.returncode == 0 and "nothing started" in checked.stdout, (words, checked.stderr)
            assert checked.run_dirs() == [] and not (checked.cwd / "ddpx-runs").exists(), "a dry run writes nothing"
            continue
        keys = [word.split(",")[0] for word in rest if "=" in word and not word.startswith("-")]
        shown = ddpx_here("show", name, *keys)
        assert shown.returncode == 0, (words, shown.stderr)


def test_far_more_cpu_ranks_than_cores_are_named_before_anything_starts(ddpx_here):
    import os

    many = 2 * (os.cpu_count() or 1) + 1
    # the task's own check then refuses the job, so nothing starts; the warning came first
    result = ddpx_here("recipe", "mlp_synthetic", "--nproc", str(many), "dataset.train_size=2", "--tracking", "none")
    assert result.returncode == 2 and "Traceback" not in result.output
    warning = f"--nproc {many} starts {many} ranks on this machine's {os.cpu_count()} CPU core(s)"
    assert warning in result.stderr and result.stderr.index(warning) < result.stderr.index("Error:")
    few = ddpx_here("recipe", "mlp_synthetic", "--nproc", "2", "dataset.train_size=1", "--tracking", "none")
    assert few.returncode == 2 and "warning" not in few.stderr


def command_paths(group, prefix=()):
    """Every command of the ``ddpx`` group, the plugins' too, as its words after ``ddpx``."""
    import click

    for name, command in sorted(group.commands.items()):
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from command_paths(command, (*prefix, name))


def test_every_commands_help_fits_an_80_column_terminal():
    """Options, examples and prose: a long example line is continued, a comment stands above its
    commands, and a paragraph is left to click to wrap."""
    from click.testing import CliRunner

    from ddpx.cli import cli
    from ddpx.cli.reference import every_command

    paths = list(command_paths(every_command))
    assert ("study", "run") in paths and ("runs",) in paths and ("bench", "collectives") in paths
    for words in [(), *paths]:
        shown = CliRunner().invoke(cli, [*words, "--help"], prog_name="ddpx", terminal_width=80)
        assert shown.exit_code == 0, (words, shown.output)
        wide = [line for line in shown.output.splitlines() if len(line) > 80]
        assert wide == [], (words, wide)
