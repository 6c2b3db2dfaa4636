"""A real plugin distribution, installed with pip, is found through the ``ddpx`` entry points;
a broken one is reported with its distribution and how to disable it, and the rest still load."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import TEST_PLUGINS

PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "ddpx-tinyplug"
version = "0.3.1"
dependencies = []

[project.entry-points.ddpx]
tinyplug = "ddpx_tinyplug"
tinyplug_broken = "ddpx_tinyplug_broken"

[tool.setuptools]
py-modules = ["ddpx_tinyplug", "ddpx_tinyplug_broken"]
"""

GOOD = """
from ddpx.api import MetricSpec, hookimpl


def top1(targets, outputs):
    return float((outputs.argmax(1) == targets).mean())


@hookimpl
def register_metrics(register):
    register(MetricSpec("tiny_top1", "top-1 accuracy from a plugin", top1))
"""

BROKEN = "import a_module_that_is_not_installed  # noqa\n"


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory):
    source = tmp_path_factory.mktemp("tinyplug-src")
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "ddpx_tinyplug.py").write_text(textwrap.dedent(GOOD))
    (source / "ddpx_tinyplug_broken.py").write_text(BROKEN)
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
    )
    assert list(target.glob("ddpx_tinyplug-0.3.1.dist-info"))
    return target


def plugins_json(run_ddpx, site, **env):
    result = run_ddpx("plugins", "--json", env={"PYTHONPATH": os.pathsep.join([str(site), str(TEST_PLUGINS)]), **env})
    assert result.returncode == 0, result.output
    return json.loads(result.stdout), result


def test_installed_plugin_is_found_through_its_entry_point(run_ddpx, installed_plugin):
    report, result = plugins_json(run_ddpx, installed_plugin)
    by_name = {p["name"]: p for p in report["plugins"]}
    tiny = by_name["tinyplug"]
    assert (tiny["distribution"], tiny["version"], tiny["source"]) == ("ddpx-tinyplug", "0.3.1", "entry point")
    assert tiny["registers"] == {"metrics": ["tiny_top1"]} and tiny["hooks"] == ["register_metrics"]
    assert "spawn" in by_name and "mlp_synthetic" in by_name  # the other plugins still load

    (error,) = report["errors"]
    assert error["name"] == "tinyplug_broken" and error["distribution"] == "ddpx-tinyplug"
    assert "a_module_that_is_not_installed" in error["message"]
    assert "DDPX_DISABLE_PLUGINS=tinyplug_broken" in error["message"]
    assert result.stderr.count("Warning:") == 1 and "Traceback" not in result.stderr


def test_disabling_the_broken_plugin_silences_it(run_ddpx, installed_plugin):
    report, result = plugins_json(run_ddpx, installed_plugin, DDPX_DISABLE_PLUGINS="tinyplug_broken")
    assert report["errors"] == [] and result.stderr == ""
    assert "tinyplug" in {p["name"] for p in report["plugins"]}


def test_without_the_install_the_plugin_is_gone(ddpx_here):
    result = ddpx_here("plugins", "--json")  # this process never had the install's folder on its path
    assert result.returncode == 0, result.output
    assert "tinyplug" not in {p["name"] for p in json.loads(result.stdout)["plugins"]}


def test_plugins_check_reports_each_check(run_ddpx, installed_plugin):
    env = {"PYTHONPATH": os.pathsep.join([str(installed_plugin), str(TEST_PLUGINS)])}
    good = run_ddpx("plugins", "check", "tinyplug", env=env)
    assert good.returncode == 0, good.output
    assert (
        "PASS  tinyplug: loads" in good.stdout
        and "PASS  tinyplug: names are its own: metrics: tiny_top1" in good.stdout
    )
    broken = run_ddpx("plugins", "check", "ddpx-tinyplug", env=env)  # by distribution: both entry points
    assert broken.returncode == 1
    assert "FAIL  tinyplug_broken: loads" in broken.stdout and "a_module_that_is_not_installed" in broken.stdout
    misspelled = run_ddpx("plugins", "check", "ddpx_testplug_misspelled", plugins=("ddpx_testplug_misspelled",))
    assert misspelled.returncode == 1
    assert "FAIL  ddpx_testplug_misspelled: hooks match the specs" in misspelled.stdout
    assert "register_task" in misspelled.stdout
