"""The function each process of ``test_signals_and_nodes``'s stop-check test runs: in a module of
its own, so that the two processes ``torch.multiprocessing.spawn`` starts import torch and ddpx's
stop checks, not the test module, MLflow and the rest of the suite's imports."""

import time
from pathlib import Path

import torch


def agree_on_a_stop(rank: int, port: int, out_dir: str) -> None:
    """One rank of a gloo world of two: rank 1 steps twice as slowly and is asked to stop at step 40."""
    import json

    import torch.distributed as dist

    from ddpx.rank.process_group import signals

    signals.CHECK_SECONDS = 0.2  # keep the test short: intervals of about 0.2 s of the slowest rank's steps
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    stops = signals.StopRequests(every=0)
    intervals, agreed_at = [], None
    for step in range(1, 400):
        time.sleep(0.002 * (rank + 1))
        if rank == 1 and step == 40:
            stops.requested = True
        if stops.agreed(step, torch.device("cpu")):
            agreed_at = step
            break
        intervals.append(stops.every)
    dist.destroy_process_group()
    stops.restore()
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps({"agreed_at": agreed_at, "intervals": intervals}))
