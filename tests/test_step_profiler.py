"""``train.profile_steps`` when training ends before the trace is done (the whole trace, on real
ranks, is in ``test_training_e2e.py``)."""

import torch

from ddpx.rank.step_profiler import SKIPPED_STEPS, WARMUP_STEPS, StepProfiler


def steps(profiler: StepProfiler, n: int) -> None:
    layer = torch.nn.Linear(8, 8)
    for _ in range(n):
        layer(torch.randn(4, 8)).sum().backward()
        profiler.step()
    profiler.close()


def test_a_run_that_ends_before_the_trace_begins_says_so_and_writes_nothing(tmp_path):
    said = []
    steps(StepProfiler(3, torch.device("cpu"), tmp_path / "profile", said.append), SKIPPED_STEPS + WARMUP_STEPS - 1)
    assert said == ["no profile: training ended after 6 step(s), before the trace began (it starts after 7); "
                    "train longer or use more data"]
    assert not (tmp_path / "profile").exists()


def test_a_run_that_ends_inside_the_trace_keeps_the_steps_it_traced(tmp_path):
    said, kept = [], []
    steps(StepProfiler(5, torch.device("cpu"), tmp_path / "profile", said.append, kept.append),
          SKIPPED_STEPS + WARMUP_STEPS + 2)
    ops = (tmp_path / "profile" / "ops.txt").read_text()
    assert ops.startswith("2 training steps traced on rank 0 after 7; per step: ") and "aten::addmm" in ops
    assert kept == [tmp_path / "profile" / "trace.json", tmp_path / "profile" / "ops.txt"]
    assert said == [f"profile of 2 training steps: {kept[0]} (open in https://ui.perfetto.dev) and {kept[1]}"]


def test_off_does_nothing(tmp_path):
    said = []
    steps(StepProfiler(0, torch.device("cpu"), tmp_path / "profile", said.append), 12)
    assert said == [] and not (tmp_path / "profile").exists()
