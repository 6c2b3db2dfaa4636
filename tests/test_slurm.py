"""The Slurm launcher on a real one-node Slurm cluster (started by .ci/slurm-cluster in CI)."""

import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from conftest import TEST_PLUGINS, TEST_RECIPES
from mlflow.tracking import MlflowClient

from ddpx.api import OPENMP_WAITING

TINY = str(TEST_RECIPES / "tiny_mlp.toml")


def cluster_ready() -> bool:
    if not os.environ.get("SLURM_CONF") or not shutil.which("sinfo"):
        return False
    out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
    return out.returncode == 0 and any(state in out.stdout for state in ("idle", "mix", "alloc"))


needs_cluster = pytest.mark.skipif(
    not cluster_ready(),
    reason="no Slurm cluster: run `.ci/slurm-cluster up DIR` and export SLURM_CONF=DIR/slurm.conf (CI does)",
)


def only_run(uri, experiment):
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    return client, run


def wait_for_job(job_id: str, timeout: float = 240) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True).stdout
        state = out.split("JobState=")[1].split()[0] if "JobState=" in out else "UNKNOWN"
        if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"):
            return state
        time.sleep(1)
    raise AssertionError(f"Slurm job {job_id} did not end in {timeout} s")


@needs_cluster
def test_a_job_slurm_refuses_is_one_clear_error_with_nothing_submitted_or_recorded(run_ddpx, tracking_uri, experiment):
    """The cluster's own sbatch refuses a partition it does not have: its words, quoted, name the fix."""
    queued = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, check=True).stdout
    result = run_ddpx(
        "recipe", TINY, "--launcher", "slurm", "--partition", "nosuch", "--tracking-uri", tracking_uri,
        "--experiment", experiment,
    )  # fmt: skip
    assert result.returncode == 2, result.output
    assert "Slurm refused the job, so nothing was submitted or recorded" in result.stderr, result.stderr
    assert "Invalid partition name specified" in result.stderr and "Fix what sbatch names (--partition" in result.stderr
    assert [line.startswith("Error:") for line in result.stderr.splitlines()].count(True) == 1, result.stderr
    assert "Traceback" not in result.output and not (result.cwd / "ddpx-runs").exists()  # made, then removed
    assert MlflowClient(tracking_uri).get_experiment_by_name(experiment) is None  # no run, not even its experiment
    assert subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True).stdout == queued


def test_dry_run_prints_the_sbatch_script_and_submits_nothing(run_ddpx):
    result = run_ddpx(
        "recipe",
        TINY,
        "--launcher",
        "slurm",
        "--nnodes",
        "2",
        "--nproc",
        "3",
        "--partition",
        "gpu",
        "--time",
        "01:00:00",
        "--account",
        "lab",
        "--sbatch-arg=--qos=high",
        "--dry-run",
    )
    assert result.returncode == 0, result.output
    for line in (
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=3",
        "#SBATCH --partition=gpu",
        "#SBATCH --time=01:00:00",
        "#SBATCH --account=lab",
        "#SBATCH --qos=high",
        "#SBATCH --signal=USR1@90",
        "#SBATCH --requeue",
        "-m ddpx.plugins.launchers.slurm_task",
    ):
        assert line in result.stdout
    (run_dir,) = result.run_dirs()
    assert (run_dir / "slurm.sbatch").is_file() and not (run_dir / "slurm-job-id").exists()


def scontrol_usable() -> bool:
    """scontrol is installed and configured (without a slurm.conf it cannot expand a node list)."""
    if not shutil.which("scontrol"):
        return False
    return subprocess.run(["scontrol", "show", "hostnames", "localhost"], capture_output=True).returncode == 0


@pytest.mark.skipif(
    not scontrol_usable(),
    reason="no configured scontrol: run `.ci/slurm-cluster up DIR` and export SLURM_CONF=DIR/slurm.conf (CI does)",
)
def test_ranks_take_their_place_from_slurm_variables():
    from ddpx.plugins.launchers.slurm_task import master_port, rank_environment

    env = rank_environment(
        {
            "SLURM_PROCID": "3",
            "SLURM_NTASKS": "4",
            "SLURM_LOCALID": "1",
            "SLURM_JOB_NUM_NODES": "2",
            "SLURM_JOB_NODELIST": "localhost",
            "SLURM_JOB_ID": "123456",
        }
    )
    assert env == {
        "RANK": "3",
        "WORLD_SIZE": "4",
        "LOCAL_RANK": "1",
        "LOCAL_WORLD_SIZE": "2",
        "MASTER_ADDR": "localhost",
        "MASTER_PORT": "23456",
    }
    assert all(20000 <= master_port(str(j)) < 30000 for j in (1, 9999, 10000, 424242))


@pytest.mark.slow
@needs_cluster
def test_a_parallel_sweep_submits_its_trials_as_slurm_jobs_at_once(run_ddpx, tracking_uri, experiment, tmp_path):
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    result = run_ddpx(
        "sweep",
        TINY,
        "train.lr=0.05,0.1",
        "train.max_epochs=1",
        "--parallel",
        "2",
        "--launcher",
        "slurm",
        "--nproc",
        "1",
        "--wait",
        "--tracking-uri",
        tracking_uri,
        "--experiment",
        experiment,
        plugins=("ddpx_testplug_meet",),
        env={"DDPX_TEST_MEET": str(meeting)},
    )
    assert result.returncode == 0, result.output
    assert "2 trial(s) on 1 rank(s) each, 2 at once, launcher slurm" in result.stdout
    assert result.stdout.count("placed by the scheduler") == 2
    client = MlflowClient(tracking_uri)
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    trials = sorted(
        (r for r in runs if "ddpx.sweep.trial" in r.data.tags), key=lambda r: r.data.tags["ddpx.sweep.trial"]
    )
    assert [r.info.status for r in trials] == ["FINISHED", "FINISHED"]
    assert all(r.data.params["launcher"] == "slurm" for r in trials)
    # each job's training waited for the other's to start (ddpx_testplug_meet)
    assert sorted(f.read_text() for f in meeting.glob("*.job")) == ["met", "met"], "both jobs ran at once"


@pytest.mark.slow
@needs_cluster
def test_inside_an_allocation_ranks_start_with_srun(tmp_path):
    # OMP_DISPLAY_ENV: each rank's OpenMP library says what it read as the rank loads torch
    env = {k: v for k, v in os.environ.items() if k not in OPENMP_WAITING}  # ddpx's own, asserted below
    env.update(PYTHONPATH=str(TEST_PLUGINS), OMP_DISPLAY_ENV="VERBOSE")
    command = f"{sys.executable} -m ddpx recipe {TINY} --launcher slurm --nproc 2 --tracking none"
    job_id = subprocess.run(
        [
            "sbatch",
            "--parsable",
            "--ntasks=2",
            f"--output={tmp_path}/own-%j.out",
            f"--chdir={tmp_path}",
            "--wrap",
            command,
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    state = wait_for_job(job_id)
    (log,) = tmp_path.glob("own-*.out")
    text = log.read_text()
    assert state == "COMPLETED", text
    assert "inside Slurm allocation" in text and "done: tiny_mlp" in text
    assert re.findall(r"GOMP_SPINCOUNT = '(\d+)'", text) == ["0", "0"], text  # idle threads sleep in both ranks


@pytest.mark.slow
@needs_cluster
def test_preemption_checkpoints_requeues_and_resumes_losing_nothing(run_ddpx, tmp_path, tracking_uri, experiment):
    args = [
        "recipe",
        "mlp_synthetic",
        "--launcher",
        "slurm",
        "--nproc",
        "2",
        "train.max_epochs=10",
        "train.patience=0",
        "dataset.train_size=6000",
    ]
    (tmp_path / "reference").mkdir()  # the uninterrupted run, on the cluster beside the preempted one: --wait
    waiting = ThreadPoolExecutor(1).submit(run_ddpx, *args, "--wait", "--tracking", "none", cwd=tmp_path / "reference")
    while not list((tmp_path / "reference").glob("ddpx-runs/*/slurm-job-id")):
        assert not waiting.done(), waiting.result().output
        time.sleep(0.2)

    preempted = tmp_path / "preempted"
    preempted.mkdir()
    submitted = run_ddpx(*args, "--tracking-uri", tracking_uri, "--experiment", experiment, cwd=preempted)
    assert submitted.returncode == 0, submitted.output
    (run_dir,) = submitted.run_dirs()
    job_id = (run_dir / "slurm-job-id").read_text()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        metrics = run_dir / "metrics.jsonl"
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 2:
            break
        time.sleep(0.3)
    subprocess.run(["scancel", "--signal=USR1", job_id], check=True)
    assert wait_for_job(job_id) == "COMPLETED"

    log = (run_dir / f"slurm-{job_id}.out").read_text()
    assert "DUE TO JOB REQUEUE" in log and "resuming from" in log
    client, run = only_run(tracking_uri, experiment)
    assert run.info.status == "FINISHED"
    assert run.data.params["world_size"] == "2" and run.data.params["launcher"] == "slurm"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train_loss")] == list(range(1, 11))
    final = torch.load(run_dir / "checkpoints" / "last.pt", weights_only=True)["model"]
    reference = waiting.result(timeout=300)  # --wait: the command returns when the job has ended
    assert reference.returncode == 0, reference.output
    assert "submitted Slurm job" in reference.stdout and "done: mlp_synthetic" in reference.stdout
    (reference_dir,) = reference.run_dirs()
    assert wait_for_job((reference_dir / "slurm-job-id").read_text()) == "COMPLETED"
    expected = torch.load(reference_dir / "checkpoints" / "last.pt", weights_only=True)["model"]
    assert all(torch.equal(final[k], expected[k]) for k in expected), "weights differ from the uninterrupted run"
