"""The pruner's warm-up: no trial is stopped before it has run ``--pruner-warmup`` epochs (by
default a fifth of the recipe's epochs), however far behind it is; after that the median pruner
stops it as before."""

from __future__ import annotations

import optuna
import pytest

from ddpx.config.search_space import build_pruner, pruner_warmup


def test_the_default_warm_up_is_a_fifth_of_the_epochs_and_an_asked_one_wins():
    assert pruner_warmup(None, 50) == 10 and pruner_warmup(None, 4) == 0 and pruner_warmup(3, 50) == 3


@pytest.mark.parametrize("direction, good, poor", [("maximize", 0.9, 0.1), ("minimize", 0.1, 0.9)])
def test_a_poor_trial_is_pruned_only_after_the_warm_up(direction, good, poor):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction=direction, pruner=build_pruner("median", max_epochs=50, warmup=10))
    for _ in range(2):  # two finished trials give the median at every epoch
        trial = study.ask()
        for epoch in range(1, 51):
            trial.report(good, epoch)
        study.tell(trial, good)
    trial = study.ask()
    stopped_at = None
    for epoch in range(1, 51):
        trial.report(poor, epoch)
        if trial.should_prune():
            stopped_at = epoch
            break
    assert stopped_at == 10  # far behind from epoch 1, and left alone for its first epochs
    hyperband = build_pruner("hyperband", max_epochs=50, warmup=10)
    assert hyperband._min_resource == 10
