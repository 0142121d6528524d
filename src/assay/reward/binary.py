"""The default reward: 1.0 for an accepted submission, 0.0 for any other verdict."""

from __future__ import annotations

from ..judge import Judgement, Problem, Submission
from .base import RewardResult, unusable


class BinaryReward:
    """All tests pass or nothing: the sparse signal most code-RL recipes start from."""

    def __call__(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        bad = unusable(judgement)
        if bad is not None:
            return bad
        value = 1.0 if judgement.verdict == "accepted" else 0.0
        return RewardResult(value, judgement.verdict, {"binary": value})
