"""The failure a job reports: the cause, not its echoes, and a collective's timeout named with its fix."""

import json

from ddpx.contract.run_dir import RunDir
from ddpx.records.failures import job_failure, record_failure

NCCL_TIMEOUT = (
    "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, "
    "NumelIn=1, NumelOut=1, Timeout(ms)=900000) ran for 900003 milliseconds before timing out."
)


def failed(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as exc:
        return exc


def test_a_peers_timeout_is_the_cause_named_with_the_jobs_timeout_and_the_fix(tmp_path):
    run_dir = RunDir.create("tiny", base=tmp_path)
    run_dir.job_file.write_text(json.dumps({"launch": {"timeout_s": 900.0}}))
    record_failure(run_dir, 1, failed(RuntimeError(NCCL_TIMEOUT)))
    record_failure(run_dir, 0, failed(RuntimeError("Connection closed by peer [127.0.0.1]:29500")))
    message = str(job_failure(run_dir, 1, "no record"))
    assert message.startswith("the job failed on rank 1 (then rank(s) 0); its error:\nTraceback")
    assert "A collective waited longer than the job's --timeout (900 s): one rank stood still" in message
    assert message.rstrip().endswith("start it again with --resume auto.")


def test_any_other_failure_is_its_traceback_alone(tmp_path):
    run_dir = RunDir.create("tiny", base=tmp_path)
    record_failure(run_dir, 0, failed(ValueError("shapes (3,) and (4,) differ")))
    message = str(job_failure(run_dir, 1, "no record"))
    assert message.endswith("ValueError: shapes (3,) and (4,) differ") and "--timeout" not in message
