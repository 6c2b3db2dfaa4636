"""The epoch bar on a terminal: the loss it shows is read at most twice a second, since on a GPU
reading a number waits for every step queued before it. Without a terminal: a plain line a minute
through a long epoch, none through a short one."""

import io

from rich.console import Console

from ddpx.rank.diagnostics.progress import EpochBar, RankConsole


class CountedLoss:
    """A loss that counts how often it is read as a number."""

    def __init__(self, value: float, counter=None):
        self.value, self.reads, self.counter = value, 0, counter or self

    def detach(self):
        return self

    def __add__(self, other):
        return CountedLoss(self.value + other.value, self.counter)

    def __float__(self):
        self.counter.reads += 1
        return self.value


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def live_bar(steps: int = 1000):
    rank = RankConsole(0)
    rank.console = Console(file=io.StringIO(), force_terminal=True, width=100)
    bar = rank.epoch_bar(1, 1, steps)
    return bar, rank.console


def test_a_burst_of_steps_reads_the_loss_once_and_the_next_read_waits_half_a_second():
    clock = Clock()
    context, _ = live_bar()
    with context as bar:
        bar = EpochBar(bar._progress, bar._task, True, clock=clock)  # the same bar, on a clock the test moves
        loss = CountedLoss(0.25)
        for _ in range(50):  # a burst of fast steps: the first one reads the loss
            bar.advance(loss)
        assert loss.reads == 1
        clock.now += EpochBar.LOSS_EVERY_S - 0.01
        bar.advance(loss)
        assert loss.reads == 1
        clock.now += 0.02
        bar.advance(loss)
        assert loss.reads == 2
        task = bar._progress.tasks[0]
        assert task.completed == 52 and task.fields["loss"] == "0.2500"


def test_the_bar_shows_the_loss_it_read():
    context, console = live_bar(steps=4)
    with context as bar:
        for value in (0.5, 0.4):
            bar.advance(CountedLoss(value))
        bar._progress.refresh()
    assert "loss 0.5000" in console.file.getvalue()


def test_without_a_terminal_nothing_is_read():
    rank = RankConsole(0)
    rank.console = Console(file=io.StringIO(), force_terminal=False)
    loss = CountedLoss(0.1)
    with rank.epoch_bar(1, 1, 10) as bar:
        for _ in range(10):
            bar.advance(loss)
    assert loss.reads == 0


def test_without_a_terminal_a_long_epoch_says_how_far_it_has_come_once_a_minute():
    clock, said = Clock(), []
    rank = RankConsole(0)
    rank.console = Console(file=io.StringIO(), force_terminal=False)
    with rank.epoch_bar(1, 2, 1000) as bar:
        bar = EpochBar(bar._progress, bar._task, False, clock=clock, lines=said.append, name="epoch 1/2", steps=1000)
        counter = CountedLoss(0.0)
        for step in range(300):  # 0.5 s a step: 150 s, two lines
            clock.now += 0.5
            bar.advance(CountedLoss(1.0 if step < 120 else 0.5, counter))
    assert said == [
        "epoch 1/2: step 120 of 1,000 (12 %), loss 1.0000 (mean of 120 steps), 1:00 so far, about 7:20 left",
        "epoch 1/2: step 240 of 1,000 (24 %), loss 0.5000 (mean of 120 steps), 2:00 so far, about 6:20 left",
    ]
    assert counter.reads == 2  # read for the lines only


def test_without_a_terminal_a_short_epoch_prints_no_line_of_its_own():
    rank = RankConsole(0)
    out = io.StringIO()
    rank.console = Console(file=out, force_terminal=False)
    with rank.epoch_bar(1, 1, 10) as bar:
        for _ in range(10):
            bar.advance(CountedLoss(0.1))
    assert out.getvalue() == ""
