"""pytest fixtures for plugin authors (loaded through the ``pytest11`` entry point).

``ddpx_run(recipe, *overrides, plugins=..., nproc=2)`` runs a recipe through the real runner on
CPU ranks in the test's temporary folder and returns a :class:`ddpx.testing.RunResult`.
"""

from __future__ import annotations

import pytest

from ddpx.testing import run_recipe


@pytest.fixture
def ddpx_run(tmp_path):
    def run(recipe: str, *overrides: str, **options):
        return run_recipe(recipe, overrides, workdir=tmp_path, **options)

    return run
