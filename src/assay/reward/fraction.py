"""Partial credit: the share of tests passed, plain or weighted by ``TestCase.weight``.

The denominator is the problem's test count, not the number of results: the judge stops
early on a compile error or with ``stop_on_failure``, and tests that never ran have not
passed.
"""

from __future__ import annotations

import math

from ..errors import ValidationError
from ..judge import Judgement, Problem, Submission
from .base import Reward, RewardResult


def _passed_indices(judgement: Judgement, problem: Problem) -> set[int]:
    passed: set[int] = set()
    for t in judgement.tests:
        if not 0 <= t.index < len(problem.tests):
            raise ValidationError(
                "judgement.tests",
                f"result for test {t.index}, but problem {problem.id!r} "
                f"has {len(problem.tests)} tests",
            )
        if t.verdict == "accepted":
            passed.add(t.index)
    return passed


class FractionReward(Reward):
    """passed / total tests of the problem."""

    def score(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        passed = len(_passed_indices(judgement, problem))
        total = len(problem.tests)
        value = passed / total
        return RewardResult(
            value,
            f"{passed}/{total} tests passed",
            {"passed": float(passed), "total": float(total)},
        )


class WeightedFractionReward(Reward):
    """Sum of the weights of passed tests over the sum of all weights."""

    def score(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        for i, test in enumerate(problem.tests):
            w = test.weight
            if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w):
                raise ValidationError(f"tests[{i}].weight", f"must be a finite number, got {w!r}")
            if w < 0:
                raise ValidationError(f"tests[{i}].weight", f"must be >= 0, got {w}")
        total = sum(t.weight for t in problem.tests)
        if total <= 0:
            raise ValidationError("tests.weight", f"problem {problem.id!r}: weights sum to 0")
        passed = sum(problem.tests[i].weight for i in _passed_indices(judgement, problem))
        value = passed / total
        return RewardResult(
            value,
            f"weight {passed:g} of {total:g} passed",
            {"passed_weight": float(passed), "total_weight": float(total)},
        )
