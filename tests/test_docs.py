"""The documentation site builds with --strict, and nothing is left undocumented."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddpx.contract.hookspecs import hook_names
from ddpx.contract.recipe_file import read_recipe_file
from ddpx.plugin_host.registry import load_registry

ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "DISABLE_MKDOCS_2_WARNING": "true"}
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    return out


def page(site: Path, path: str) -> str:
    return (site / path / "index.html").read_text(encoding="utf-8")


def test_every_hook_is_in_the_hook_reference(site):
    reference = page(site, "plugins/hooks")
    for name in hook_names():
        assert f'id="ddpx.contract.hookspecs.{name}"' in reference, f"hook {name} is undocumented"


def test_every_recipe_is_documented(site):
    reference = page(site, "reference/recipes")
    registry = load_registry()
    for name, source in registry.all("recipes").items():
        text = Path(source.path).read_text(encoding="utf-8")
        assert read_recipe_file(Path(source.path)).get("description"), f"recipe {name} has no description"
        assert text.startswith("#"), f"recipe {name} has no explanatory header comment"
        assert f"<code>{name}</code>" in reference, f"recipe {name} is missing from the recipe reference"


def test_every_command_is_in_the_cli_reference(site):
    """The plugins' commands (``ddpx runs``, ``ddpx bench``) as well as the core's."""
    import click

    from ddpx.cli import cli

    reference = page(site, "reference/cli")
    names = cli.list_commands(click.Context(cli))
    assert {"recipe", "runs", "bench", "predict"} <= set(names)
    for name in names:
        assert f"ddpx {name}" in reference, f"command {name} is undocumented"
    assert "ddpx plugins check" in reference and "ddpx bench collectives" in reference


def test_code_shown_in_the_plugin_guide_comes_from_the_tested_example(site):
    tutorial = page(site, "plugins/tutorial")
    assert "make_moons" in tutorial and "register_tasks" in tutorial and "moons_mlp" in tutorial
    assert "ddpx_run" in page(site, "plugins/testing")
