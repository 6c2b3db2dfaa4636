"""Models of separate runs (a candidate's seeds, say) as one ensemble, scored on the held-out split.

Each member's answers are read back from its run's predictions file
(:mod:`ddpx.records.heldout_answers`) and first scored alone: the file must give its run's own
held-out value, else the ensemble is not made. The members' answers are then averaged sample by
sample as a ``train.ensemble_size`` ensemble averages its members
(:func:`ddpx.records.ensemble.combine`): each label's or class's probability, or each predicted
value; the average is scored with the run's metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ddpx.records.heldout_answers import HeldoutAnswers, NoValue, score

AGREEMENT = 1e-4  # a file gives its run's value when the two agree to the table's four decimals


@dataclass(frozen=True)
class Member:
    """One model of an ensemble: which run it is, its held-out answers, and its run's held-out value."""

    label: str
    answers: HeldoutAnswers
    value: float


def together(members: Sequence[Member], metric: str) -> float:
    """The held-out ``metric`` of ``members`` as one ensemble (:class:`NoValue` says why there is none)."""
    if len(members) < 2:
        raise NoValue("one model is no ensemble")
    return score(average([checked(member, metric) for member in members]), metric)


def checked(member: Member, metric: str) -> HeldoutAnswers:
    """The member's answers, once they give its run's own value."""
    again = score(member.answers, metric)
    if abs(again - member.value) > AGREEMENT:
        raise NoValue(
            f"{member.label}'s predictions file gives {metric} {again:.6f}, its run {member.value:.6f}: "
            "the file is not of the run's held-out result"
        )
    return member.answers


def average(answers: Sequence[HeldoutAnswers]) -> HeldoutAnswers:
    """The answers averaged sample by sample, in their own form (the logit of the mean probability,
    the log of the mean class probabilities, the mean value)."""
    import torch

    from ddpx.records.ensemble import combine

    first = answers[0]
    if not all(first.same_samples(other) for other in answers[1:]):
        raise NoValue(
            "the runs' held-out samples differ (their targets do): a seed that draws the data or the split "
            "gives each run samples of its own"
        )
    mean, _ = combine(torch.from_numpy(np.stack([a.outputs for a in answers])), first.loss)
    return replace(first, outputs=mean.numpy())
