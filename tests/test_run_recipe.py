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


def test_the_environment_counts_as_for_ddpx_recipe(monkeypatch):
    from ddpx.contract.launch_settings import LaunchSettings

    monkeypatch.setenv("DDPX_LOG_MODEL", "false")
    monkeypatch.setenv("DDPX_SYSTEM_METRICS", "0")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///elsewhere.db")
    settings = LaunchSettings.from_environment(nproc=3)
    assert (settings.log_model, settings.system_metrics, settings.nproc) == (False, False, 3)
    assert settings.tracking_uri == "sqlite:///elsewhere.db"
    given = LaunchSettings.from_environment(tracking_uri="sqlite:///given.db", log_model=True)
    assert (given.tracking_uri, given.log_model) == ("sqlite:///given.db", True)  # what a caller passes comes first
    monkeypatch.setenv("DDPX_LOG_MODEL", "maybe")
    with pytest.raises(UserError, match="'maybe' is not a true or false value"):
        LaunchSettings.from_environment()
    monkeypatch.setenv("DDPX_LOG_MODEL", "")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "")
    empty = LaunchSettings.from_environment()  # empty counts as unset, as for click: the options' defaults
    assert (empty.log_model, empty.tracking_uri) == (True, None)
