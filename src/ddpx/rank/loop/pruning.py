"""Pruning a search's trial, obeyed by every rank.

When the job is a trial of an Optuna search (``job.search``), rank 0 reports each epoch's dev
metric to the trial in the study's storage and asks Optuna's pruner whether to stop; the answer
is broadcast, so every rank stops after the same epoch — no rank waits in a collective for a
peer that has left. A pruned run still evaluates its best weights on the held-out split, so its
curve and its result are kept; the search records the trial as PRUNED.
"""

from __future__ import annotations

from typing import Any

from ddpx.config.search_space import build_pruner
from ddpx.rank.process_group.distributed import broadcast_object


class TrialPruning:
    """The link from this job to its Optuna trial (opened on rank 0 only)."""

    def __init__(self, search: dict[str, Any], is_main: bool):
        self.trial = None
        if is_main:
            import optuna

            # a pruner is not stored with the study
            pruner = build_pruner(search["pruner"], search["max_epochs"], search.get("pruner_warmup", 0))
            study = optuna.load_study(study_name=search["study"], storage=search["storage"], pruner=pruner)
            self.trial = optuna.trial.Trial(study, search["trial_id"])

    def should_stop(self, epoch: int, dev_value: float) -> bool:
        """Report ``dev_value`` at ``epoch``; the pruner's answer, the same on every rank."""
        answer = None
        if self.trial is not None:
            self.trial.report(dev_value, epoch)
            answer = self.trial.should_prune()
        return bool(broadcast_object(answer))
