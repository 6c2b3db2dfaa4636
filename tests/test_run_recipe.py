"""``ddpx.testing.run_recipe``, the helper a plugin's own tests call: its refusals."""

import shutil

import pytest

from ddpx.api import UserError
from ddpx.testing import run_recipe


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="Slurm's sbatch is not installed here")
def test_a_launcher_that_returns_before_the_job_runs_is_refused_before_anything_is_made(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)  # outside an allocation: sbatch would submit and return
    with pytest.raises(UserError, match=r"launcher 'slurm' hands it to a batch system .* launcher='spawn'"):
        run_recipe("mlp_synthetic", launcher="slurm", workdir=tmp_path)
    assert list(tmp_path.iterdir()) == []  # no run folder, nothing submitted
