"""``train.profile_steps``: a ``torch.profiler`` trace of a few training steps, on rank 0.

After ``SKIPPED_STEPS`` optimizer steps (the first steps compile, pick kernels and fill caches)
and ``WARMUP_STEPS`` traced but discarded, rank 0 records ``train.profile_steps`` optimizer steps
(with ``train.accumulate``, each with all its micro-batches) — the batches, the forwards, the
backwards with DDP's all-reduce, the optimizer — with the CPU's and (on a GPU) the device's
activity, then stops; a trace also stops at the end of an epoch, before the dev evaluation. It
writes two files into the run folder:

- ``profile/trace.json``: the timeline, for Perfetto (https://ui.perfetto.dev) or
  ``chrome://tracing``;
- ``profile/ops.txt``: the operators ranked by their own time on the device (on the CPU without
  one), with the per-step totals above the table.

With MLflow on, both are the run's artifacts too, under ``profile/``.

Off (0, the default), nothing is imported or wrapped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import torch
from torch.autograd import DeviceType

SKIPPED_STEPS = 5
WARMUP_STEPS = 2
TABLE_ROWS = 30


class StepProfiler:
    """Call :meth:`step` after every optimizer step, :meth:`epoch_ended` after each epoch's last
    step, and :meth:`close` (or, when training raised, :meth:`abandon`) at the end of training."""

    def __init__(
        self,
        steps: int,
        device: torch.device,
        folder: Path,
        report: Callable[[str], None],
        keep: Callable[[Path], None] | None = None,
    ):
        """``report`` tells the user where the files are; ``keep`` (the tracker's) stores each one."""
        self.steps, self.folder, self.report, self.keep = steps, folder, report, keep
        self.on_device = device.type == "cuda"
        self._profile, self._seen, self._written, self._discard = None, 0, False, False
        if steps:
            os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # the profiler library's errors about absent GPUs: quiet
            self._profile = torch.profiler.profile(
                activities=[
                    torch.profiler.ProfilerActivity.CPU,
                    *([torch.profiler.ProfilerActivity.CUDA] if self.on_device else []),
                ],
                schedule=torch.profiler.schedule(wait=SKIPPED_STEPS, warmup=WARMUP_STEPS, active=steps, repeat=1),
                on_trace_ready=self._write,
            )
            self._profile.start()

    @classmethod
    def off(cls) -> StepProfiler:
        return cls(0, torch.device("cpu"), Path("."), print)

    def step(self) -> None:
        if self._profile is not None:
            self._seen += 1
            self._profile.step()

    def epoch_ended(self) -> None:
        """A trace under way ends with the epoch's last step, before the dev evaluation and the
        checkpoint (which are not training steps); one not yet begun goes on in the next epoch."""
        if self._profile is not None and self._seen > SKIPPED_STEPS + WARMUP_STEPS:
            self.close()

    def close(self) -> None:
        """Stop; a trace cut short writes the steps it holds, and one never begun says so."""
        if self._stop() and not self._written:
            self.report(
                f"no profile: training ended after {self._seen} step(s), before the trace began (it "
                f"starts after {SKIPPED_STEPS + WARMUP_STEPS}); train longer or use more data"
            )

    def abandon(self) -> None:
        """Training raised: stop without writing, and never hide the error training raised."""
        self._discard = True
        try:
            self._stop()
        except Exception:
            pass

    def _stop(self) -> bool:
        """Stop the profiler if it runs (its trace is written then, unless discarded); whether it ran."""
        if self._profile is None:
            return False
        profile, self._profile = self._profile, None
        profile.stop()
        return True

    def _write(self, profile) -> None:
        if self._discard:
            return
        self._written = True
        self.folder.mkdir(parents=True, exist_ok=True)
        trace, ops = self.folder / "trace.json", self.folder / "ops.txt"
        profile.export_chrome_trace(str(trace))
        averages = profile.key_averages()
        key = "self_device_time_total" if self.on_device else "self_cpu_time_total"
        steps = max(1, min(self.steps, self._seen - SKIPPED_STEPS - WARMUP_STEPS))  # fewer when the epoch ended first
        host_ms = sum(e.cpu_time_total for e in averages if e.key.startswith("ProfilerStep")) / 1000 / steps
        device_ms = device_kernel_us(averages) / 1000 / steps
        head = (
            f"{steps} training steps traced on rank 0 after {SKIPPED_STEPS + WARMUP_STEPS}; per step: "
            f"{host_ms:.3f} ms on the host"
            + (
                f", {device_ms:.3f} ms of device kernels (the device busy {device_ms / host_ms:.0%} of the host's step)"
                if self.on_device and host_ms
                else ""
            )
            + "\n\n"
        )
        ops.write_text(head + averages.table(sort_by=key, row_limit=TABLE_ROWS) + "\n")
        for path in (trace, ops) if self.keep else ():
            self.keep(path)
        self.report(f"profile of {steps} training steps: {trace} (open in https://ui.perfetto.dev) and {ops}")


def device_kernel_us(averages) -> float:
    """The device's own time in microseconds: kernels and copies alone, as torch's own table sums
    it (an operator on the CPU also carries its kernels' time, and annotations span them)."""
    return sum(
        e.self_device_time_total
        for e in averages
        if getattr(e, "device_type", DeviceType.CPU) != DeviceType.CPU and not getattr(e, "is_user_annotation", False)
    )
