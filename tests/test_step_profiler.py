"""``train.profile_steps`` when training ends before the trace is done (the whole trace, on real
ranks, is in ``test_training_e2e.py``)."""

from types import SimpleNamespace

import torch
from torch.autograd import DeviceType

from ddpx.rank.diagnostics.step_profiler import SKIPPED_STEPS, WARMUP_STEPS, StepProfiler, device_kernel_us


def steps(profiler: StepProfiler, n: int, close: bool = True) -> None:
    layer = torch.nn.Linear(8, 8)
    for _ in range(n):
        layer(torch.randn(4, 8)).sum().backward()
        profiler.step()
    if close:
        profiler.close()


def test_a_run_that_ends_before_the_trace_begins_says_so_and_writes_nothing(tmp_path):
    said = []
    steps(StepProfiler(3, torch.device("cpu"), tmp_path / "profile", said.append), SKIPPED_STEPS + WARMUP_STEPS - 1)
    assert said == [
        "no profile: training ended after 6 step(s), before the trace began (it starts after 7); "
        "train longer or use more data"
    ]
    assert not (tmp_path / "profile").exists()


def test_a_run_that_ends_inside_the_trace_keeps_the_steps_it_traced(tmp_path):
    said, kept = [], []
    steps(
        StepProfiler(5, torch.device("cpu"), tmp_path / "profile", said.append, kept.append),
        SKIPPED_STEPS + WARMUP_STEPS + 2,
    )
    ops = (tmp_path / "profile" / "ops.txt").read_text()
    assert ops.startswith("2 training steps traced on rank 0 after 7; per step: ") and "aten::addmm" in ops
    assert kept == [tmp_path / "profile" / "trace.json", tmp_path / "profile" / "ops.txt"]
    assert said == [f"profile of 2 training steps: {kept[0]} (open in https://ui.perfetto.dev) and {kept[1]}"]


def test_off_does_nothing(tmp_path):
    said = []
    steps(StepProfiler(0, torch.device("cpu"), tmp_path / "profile", said.append), 12)
    assert said == [] and not (tmp_path / "profile").exists()


def test_an_epoch_that_ends_during_the_warm_up_leaves_the_trace_to_the_next_and_one_inside_it_ends_it(tmp_path):
    said = []
    profiler = StepProfiler(4, torch.device("cpu"), tmp_path / "profile", said.append)
    steps(profiler, SKIPPED_STEPS + 1, close=False)
    profiler.epoch_ended()  # still warming up: nothing written, the trace goes on
    assert said == [] and not (tmp_path / "profile").exists()
    steps(profiler, WARMUP_STEPS + 1, close=False)  # the next epoch: the warm-up's last step, then 2 traced of 4
    profiler.epoch_ended()  # inside the trace: it stops before the dev evaluation, with the steps it holds
    assert (tmp_path / "profile" / "ops.txt").read_text().startswith("2 training steps traced")
    profiler.close()
    assert said == [
        f"profile of 2 training steps: {tmp_path / 'profile' / 'trace.json'} (open in "
        f"https://ui.perfetto.dev) and {tmp_path / 'profile' / 'ops.txt'}"
    ]


def test_training_that_raised_writes_and_says_nothing(tmp_path):
    said, kept = [], []
    profiler = StepProfiler(5, torch.device("cpu"), tmp_path / "profile", said.append, kept.append)
    steps(profiler, SKIPPED_STEPS + WARMUP_STEPS + 2, close=False)
    profiler.abandon()
    assert said == [] and kept == [] and not (tmp_path / "profile").exists()


def test_the_device_time_counts_kernels_once():
    cpu_op = SimpleNamespace(device_type=DeviceType.CPU, is_user_annotation=False, self_device_time_total=900.0)
    kernel = SimpleNamespace(device_type=DeviceType.CUDA, is_user_annotation=False, self_device_time_total=700.0)
    copy = SimpleNamespace(device_type=DeviceType.CUDA, is_user_annotation=False, self_device_time_total=200.0)
    step_mark = SimpleNamespace(device_type=DeviceType.CUDA, is_user_annotation=True, self_device_time_total=950.0)
    assert device_kernel_us([cpu_op, kernel, copy, step_mark]) == 900.0  # not the launching op, not the annotation
