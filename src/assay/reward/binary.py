"""The default reward: 1.0 for an accepted submission, 0.0 for any other verdict."""

from __future__ import annotations

from ..judge import Judgement, Problem, Submission
from .base import Reward, RewardResult


class BinaryReward(Reward):
    """All tests pass or nothing: the sparse signal most code-RL recipes start from."""

    def score(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        value = 1.0 if judgement.verdict == "accepted" else 0.0
        return RewardResult(value, judgement.verdict, {"binary": value})
