from __future__ import annotations

from collections.abc import Callable

import pytest

from assay import Judgement, Problem
from assay.reward import BinaryReward

MakeJudgement = Callable[..., Judgement]


@pytest.mark.parametrize(
    ("verdicts", "value"),
    [
        (("accepted", "accepted", "accepted"), 1.0),
        (("accepted", "wrong_answer", "accepted"), 0.0),
        (("time_limit",), 0.0),
        (("compile_error",), 0.0),
    ],
)
def test_binary(
    make: MakeJudgement, problem: Problem, verdicts: tuple[str, ...], value: float
) -> None:
    r = BinaryReward()(make(*verdicts), problem)
    assert r.value == value and r.components == {"binary": value}


def test_sandbox_error_is_none_not_zero(make: MakeJudgement, problem: Problem) -> None:
    r = BinaryReward()(make("accepted", "sandbox_error", "accepted"), problem)
    assert r.value is None and "sandbox_error" in r.reason


def test_matches_judge_reward(make: MakeJudgement, problem: Problem) -> None:
    for verdicts in [("accepted",) * 3, ("wrong_answer",), ("sandbox_error",)]:
        j = make(*verdicts)
        assert BinaryReward()(j, problem).value == j.reward
