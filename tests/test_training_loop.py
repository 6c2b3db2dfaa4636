"""The training loop's parts, in this process: how micro-batches group into optimizer steps,
clipping on the accumulated gradient, the learning-rate schedules with their warm-up (and their
checkpointed state), how an interrupted epoch is dealt to another number of ranks, and ``train.deterministic``'s kernels."""

from __future__ import annotations

import math
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
from torch.utils.data.distributed import DistributedSampler

from ddpx.plugin_host.registry import load_registry
from ddpx.rank.diagnostics.phase_clock import PhaseClock
from ddpx.rank.loop.accumulation import MicroBatch, optimizer_steps
from ddpx.rank.loop.epochs import optimizer_step
from ddpx.rank.loop.optim import build_schedule
from ddpx.rank.loop.world_change import deal, orders_left

TRAIN = {
    "lr": 0.4,
    "max_epochs": 5,
    "warmup_steps": 0,
    "warmup_fraction": 0.0,
    "lr_decay_every": 2,
    "lr_decay_factor": 0.5,
    "lr_schedule": "constant",
    "clip_grad_norm": 0.0,
}


def test_micro_batches_group_into_optimizer_steps_and_the_last_step_of_an_epoch_may_be_short():
    groups = [MicroBatch.at(i, 5, 2) for i in range(5)]
    assert [(m.first, m.last, m.group_size, m.optimizer_step) for m in groups] == [
        (True, False, 2, 1),
        (False, True, 2, 1),
        (True, False, 2, 2),
        (False, True, 2, 2),
        (True, True, 1, 3),
    ]
    assert [MicroBatch.at(i, 3, 1).last for i in range(3)] == [True, True, True]
    assert optimizer_steps(5, 2) == 3 and optimizer_steps(4, 2) == 2


def test_clipping_scales_the_whole_gradient_to_the_norm_and_reports_the_norm_before():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    (model(torch.randn(8, 4)).pow(2).sum() * 100).backward()
    raw = torch.cat([p.grad.flatten() for p in model.parameters()])
    state = SimpleNamespace(
        optimizer=optimizer,
        wrapped=model,
        scheduler=None,
        global_step=0,
        scaler=torch.amp.GradScaler("cpu", enabled=False),
    )
    norm = optimizer_step(SimpleNamespace(state=state, train={**TRAIN, "clip_grad_norm": 0.25}))
    assert float(norm) == pytest.approx(raw.norm().item()) and float(norm) > 0.25
    step = torch.cat([(b - p.detach()).flatten() for b, p in zip(before, model.parameters())])
    assert step.norm().item() == pytest.approx(0.5 * 0.25, rel=1e-5), "the update is lr × the clipped gradient"
    assert torch.allclose(step / step.norm(), raw / raw.norm(), atol=1e-6), "clipping keeps the direction"
    assert state.global_step == 1


def rates(train: dict, steps_per_epoch: int, steps: int | None = None) -> list[float]:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=train["lr"])
    schedule = build_schedule(load_registry().get("schedules", train["lr_schedule"]), optimizer, train, steps_per_epoch)
    seen = []
    for _ in range(steps if steps is not None else train["max_epochs"] * steps_per_epoch):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        if schedule is not None:
            schedule.step()
    return seen


def test_warmup_then_cosine_step_and_constant_schedules():
    cosine = rates({**TRAIN, "lr_schedule": "cosine", "warmup_steps": 4}, steps_per_epoch=4)  # 20 steps
    assert cosine[:5] == pytest.approx([0.1, 0.175, 0.25, 0.325, 0.4]), "linear warm-up from lr/4 to lr"
    assert all(a > b for a, b in zip(cosine[4:], cosine[5:])) and cosine[-1] < 0.01, "then annealed to about 0"
    assert rates({**TRAIN, "lr_schedule": "cosine", "warmup_fraction": 0.2}, steps_per_epoch=4) == cosine

    step = rates({**TRAIN, "lr_schedule": "step"}, steps_per_epoch=3)  # halved every 2 epochs = 6 steps
    assert step == pytest.approx([0.4] * 6 + [0.2] * 6 + [0.1] * 3)
    constant = rates({**TRAIN, "warmup_steps": 2}, steps_per_epoch=3)
    assert constant == pytest.approx([0.2, 0.3] + [0.4] * 13), "warm-up from lr/2 over 2 steps, then constant"
    assert rates(TRAIN, steps_per_epoch=3) == [0.4] * 15


def test_a_schedule_with_warmup_continues_from_its_saved_state():
    train = {**TRAIN, "lr_schedule": "cosine", "warmup_steps": 3}
    whole = rates(train, steps_per_epoch=4)
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=train["lr"])
    schedule = build_schedule(load_registry().get("schedules", train["lr_schedule"]), optimizer, train, 4)
    for _ in range(7):
        optimizer.step()
        schedule.step()
    saved_optimizer, saved_schedule = optimizer.state_dict(), schedule.state_dict()

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=train["lr"])
    schedule = build_schedule(load_registry().get("schedules", train["lr_schedule"]), optimizer, train, 4)
    optimizer.load_state_dict(saved_optimizer)
    schedule.load_state_dict(saved_schedule)
    continued = []
    for _ in range(13):
        continued.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert continued == pytest.approx(whole[7:])


@pytest.mark.parametrize("old_world, new_world", [(3, 2), (2, 3), (2, 2), (4, 1)])
def test_an_interrupted_epoch_dealt_to_another_world_trains_each_remaining_sample_once(old_world, new_world):
    dataset = list(range(101))  # not a multiple of any world: the sampler pads
    batch, steps = 4, 5

    def build(rank, world_size):
        return DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=7)

    resume = {"epoch": 1, "step": steps, "batch_size": batch, "ranks": [{"totals": [0, 0]}] * old_world}
    left = orders_left(resume, build, batch)
    full = []
    for rank in range(old_world):
        sampler = build(rank, old_world)
        sampler.set_epoch(2)
        full.append(list(sampler))
    trained = {i for order in full for i in order[: steps * batch]}
    assert [order[steps * batch :] for order in full] == left

    shares = [deal(left, rank, new_world) for rank in range(new_world)]
    assert len({len(share) for share in shares}) == 1, "every new rank takes the same number of steps"
    dealt = [i for share in shares for i in share]
    assert set(dealt) | trained == set(dataset), "the epoch still covers every sample"
    assert len(dealt) - len(set(dealt)) < new_world + old_world, "repeats are only the samplers' padding"
    assert math.ceil(sum(map(len, left)) / new_world) == len(shares[0])

    # an epoch that was itself dealt: each rank's rest is read from the checkpoint, not the sampler
    carried = {**resume, "step": 1, "ranks": [{"order_left": share[batch:]} for share in shares]}
    assert orders_left(carried, build, batch) == [share[batch:] for share in shares]


def test_the_phase_clock_sums_each_phase_over_an_epoch_and_starts_again_after_each():
    clock = PhaseClock(torch.device("cpu"), enabled=True)
    seen = []
    for item in clock.batches(range(4)):
        with clock.phase("forward"):
            seen.append(item)
            torch.ones(200, 200).matmul(torch.ones(200, 200))
    assert seen == [0, 1, 2, 3], "every batch, in order"
    first = clock.take()
    assert set(first) == {"batch_s", "forward_s", "backward_s", "optimizer_s"}
    assert first["forward_s"] > 0 and first["batch_s"] > 0 and first["backward_s"] == first["optimizer_s"] == 0
    assert clock.take() == dict.fromkeys(first, 0.0), "the next epoch starts from zero"

    off = PhaseClock(torch.device("cpu"), enabled=False)
    loader = [1, 2]
    assert off.batches(loader) is loader and off.take() == {}
    with off.phase("forward"):
        pass
    assert off.take() == {}


DETERMINISTIC = """
import os
import torch
from ddpx.rank.loop.optim import seed_everything

torch.set_num_threads(2)
seed_everything(0, deterministic=True)


def gradient():  # the backward of indexing by an index tensor: index_put_ with accumulate=True
    torch.manual_seed(0)
    index, values = torch.randint(0, 20_000, (60_000,)), torch.randn(60_000, 300)
    weights = torch.randn(20_000, 300, requires_grad=True)
    (weights[index] * values).sum().backward()
    return weights.grad


first = gradient()
same = all(torch.equal(first, gradient()) for _ in range(3))
print(torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(), same)
print(os.environ["CUBLAS_WORKSPACE_CONFIG"])
"""


def test_deterministic_kernels_make_a_threaded_cpu_rank_repeat_bit_for_bit():
    """``train.deterministic=true``: torch's deterministic kernels, warning (not failing) where an op has
    none; with them the backward of indexing by an index tensor on two CPU threads (which graph models
    use, and which otherwise adds in an order that varies) repeats bit for bit. In a process of its own:
    the setting is the whole process's."""
    done = subprocess.run([sys.executable, "-c", DETERMINISTIC], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", ":4096:8"]
