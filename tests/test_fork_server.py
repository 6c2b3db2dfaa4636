"""The spawn launcher's fork server imports what a later job of the same process needs (a sweep, a
study or a test session runs several jobs in one process, and the server outlives each): a rank
forked after a job that needs a new module finds it imported, never a server stopped under a rank."""

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import json, multiprocessing, os, sys
    from ddpx.plugins.launchers.fork_server import preload, preloaded

    def report(queue, names):
        seen = {name: name in sys.modules for name in names}
        queue.put({**seen, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY")})

    def hold(event):
        event.wait(60)

    def forked(context, names):
        queue = context.SimpleQueue()
        process = context.Process(target=report, args=(queue, names))
        process.start()
        answer = queue.get()
        process.join()
        return answer

    if __name__ == "__main__":
        context = multiprocessing.get_context("forkserver")
        server = multiprocessing.forkserver._forkserver
        seen = {}
        preload(context, ["__main__", "colorsys"])  # the first job's modules
        seen["first"] = forked(context, ["colorsys", "wave"])
        first_pid = server._forkserver_pid
        preload(context, ["__main__", "colorsys"])  # the same again: the server is kept
        seen["same kept"] = server._forkserver_pid == first_pid
        preload(context, ["__main__", "wave"])  # a job that needs another module
        seen["second"] = forked(context, ["colorsys", "wave"])
        seen["restarted"] = server._forkserver_pid != first_pid
        seen["list"] = preloaded()
        event = context.Event()
        running = context.Process(target=hold, args=(event,))
        running.start()  # a rank of this process still runs: its server is not stopped under it
        pid = server._forkserver_pid
        preload(context, ["__main__", "json"])
        seen["kept while running"] = server._forkserver_pid == pid and "json" not in preloaded()
        event.set()
        running.join()
        os.environ["OMP_WAIT_POLICY"] = "ACTIVE"  # read once, as a server loads torch: a job that sets it
        preload(context, ["__main__", "wave"])
        seen["restarted for its environment"] = server._forkserver_pid != pid
        seen["its environment"] = forked(context, [])["OMP_WAIT_POLICY"]
        print(json.dumps(seen))
    """
)


def test_a_later_job_finds_its_modules_imported_by_the_fork_server(tmp_path):
    (tmp_path / "jobs.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run(
        [sys.executable, "jobs.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(done.stdout)
    assert seen["first"] == {"colorsys": True, "wave": False, "OMP_WAIT_POLICY": None}
    assert seen["same kept"]
    assert seen["second"] == {"colorsys": True, "wave": True, "OMP_WAIT_POLICY": None}  # what it had, the new one
    assert seen["restarted"] and seen["list"] == ["__main__", "colorsys", "wave"]
    assert seen["kept while running"]
    assert seen["restarted for its environment"] and seen["its environment"] == "ACTIVE"
