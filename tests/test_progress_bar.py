"""The epoch bar on a terminal: the loss it shows is read at most twice a second, since on a GPU
reading a number waits for every step queued before it."""

import io

from rich.console import Console

from ddpx.rank.diagnostics.progress import EpochBar, RankConsole


class CountedLoss:
    """A loss that counts how often it is read as a number."""

    def __init__(self, value: float):
        self.value, self.reads = value, 0

    def detach(self):
        return self

    def __float__(self):
        self.reads += 1
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
