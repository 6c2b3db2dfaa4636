"""What a plugin adds by name reaches the CLI and the ranks: a launcher's own option, an
optimizer, a learning-rate schedule."""

import json
import re

import pytest

PLUGIN = ("ddpx_testplug_components",)


def test_a_launcher_declares_its_own_option(run_ddpx):
    help_text = run_ddpx("recipe", "--help", plugins=PLUGIN).stdout
    assert "--greeting" in help_text and "What the greeter writes." in help_text
    result = run_ddpx(
        "recipe",
        "mlp_synthetic",
        "--launcher",
        "greeter",
        "--greeting",
        "hi there",
        "--tracking",
        "none",
        plugins=PLUGIN,
    )
    assert result.returncode == 0, result.output
    (run_dir,) = result.run_dirs()
    assert (run_dir / "greeting.txt").read_text() == "hi there"
    assert json.loads((run_dir / "job.json").read_text())["launch"]["launcher_options"] == {"greeting": "hi there"}


def test_another_launchers_option_is_a_usage_error(run_ddpx, ddpx_here):
    result = run_ddpx("recipe", "mlp_synthetic", "--greeting", "hi", "--tracking", "none", plugins=PLUGIN)
    assert result.returncode == 2
    assert "--greeting is an option of --launcher greeter, not of --launcher spawn" in result.stderr
    assert "Traceback" not in result.output and not result.run_dirs()
    slurm = ddpx_here("recipe", "mlp_synthetic", "--partition", "gpu", "--tracking", "none")  # no plugin: in-process
    assert slurm.returncode == 2 and "--partition is an option of --launcher slurm" in slurm.stderr


def test_a_sweep_refuses_a_launcher_that_detaches(run_ddpx):
    result = run_ddpx(
        "sweep", "mlp_synthetic", "train.lr=0.1,0.2", "--launcher", "greeter", "--tracking", "none", plugins=PLUGIN
    )
    assert result.returncode == 2
    assert "would hand each trial over and return" in result.stderr and not result.run_dirs()


@pytest.mark.slow
def test_a_plugins_optimizer_and_schedule_train_the_model(run_ddpx):
    result = run_ddpx(
        "recipe",
        "mlp_synthetic",
        "--tracking",
        "none",
        "--nproc",
        "1",
        "train.optimizer=half_lr_sgd",
        "train.lr_schedule=halve_each_step",
        "train.lr=0.2",
        "train.max_epochs=1",
        "dataset.train_size=128",
        "dataset.dev_size=32",
        "dataset.heldout_size=32",
        "train.batch_size=64",
        plugins=PLUGIN,
        env={"COLUMNS": ""},
    )  # piped, with no terminal width to go by
    assert result.returncode == 0, result.output
    (run_dir,) = result.run_dirs()
    assert re.search(rf"run folder +{re.escape(str(run_dir))} *\n", result.stdout)  # the whole path, on one line
    (epoch,) = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert epoch["lr"] == 0.2 / 2 * 0.5**2  # half of train.lr, halved after each of the 2 steps


def test_an_unknown_optimizer_lists_the_registered_ones(ddpx_here):
    result = ddpx_here("show", "mlp_synthetic", "train.optimizer=adamm")
    assert result.returncode == 2
    assert "unknown optimizer 'adamm' (set by 'train.optimizer'). Did you mean 'adam'?" in result.stderr
    assert "Available: adam, adamw, sgd." in result.stderr


COMMANDS = ("ddpx_testplug_commands",)


def test_a_plugins_command_is_listed_and_runs(run_ddpx, ddpx_here):
    """A third-party plugin's ``register_commands`` adds ``ddpx greet``: ``ddpx --help`` lists it,
    it runs with ddpx's error handling, and ``ddpx plugins`` names its owner."""
    listed = run_ddpx("--help", plugins=COMMANDS)
    assert listed.returncode == 0 and re.search(r"^  greet +Greet NAME", listed.stdout, re.M), listed.output
    assert "greet" not in ddpx_here("--help").stdout  # without the plugin, no such command
    assert "--shout" in run_ddpx("greet", "--help", plugins=COMMANDS).stdout
    greeted = run_ddpx("greet", "Ada", "--shout", plugins=COMMANDS)
    assert greeted.returncode == 0 and greeted.stdout == "HELLO, ADA\n", greeted.output
    refused = run_ddpx("greet", "nobody", plugins=COMMANDS)
    assert refused.returncode == 2 and refused.stderr == "Error: there is nobody to greet: give a name.\n"
    report = json.loads(run_ddpx("plugins", "--json", plugins=COMMANDS).stdout)
    (mine,) = [p for p in report["plugins"] if p["name"] == "ddpx_testplug_commands"]
    assert mine["registers"] == {"commands": ["greet"]} and "register_commands" in mine["hooks"]


def test_a_plugins_command_cannot_replace_a_built_in_one(run_ddpx):
    result = run_ddpx("recipes", plugins=COMMANDS, env={"DDPX_TESTPLUG_CLASH": "1"})
    assert result.returncode == 0 and "mlp_synthetic" in result.stdout  # the built-in command ran
    listed = run_ddpx("--help", plugins=COMMANDS, env={"DDPX_TESTPLUG_CLASH": "1"})
    assert "plugin 'ddpx_testplug_commands' registers the command 'recipes', which ddpx has" in listed.stderr
    assert re.search(r"^  greet ", listed.stdout, re.M)  # its other command still joins


def test_a_plugin_loads_its_own_kind_of_model_for_predict(run_ddpx, ddpx_here, tmp_path):
    (tmp_path / "rows.csv").write_text("x0\n1\n2\n")
    answered = run_ddpx("predict", "constant:0.25", "rows.csv", plugins=COMMANDS)
    assert answered.returncode == 0 and answered.stdout.splitlines() == ["x0,prediction", "1,0.25", "2,0.25"]
    unknown = ddpx_here("predict", "constant:0.25", "rows.csv", env={"DDPX_DISABLE_PLUGINS": "mlflow"})
    assert unknown.returncode == 2 and "no installed plugin loads it as a model" in unknown.stderr
