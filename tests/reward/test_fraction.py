from __future__ import annotations

from collections.abc import Callable

import pytest

import assay
from assay import Judgement, Problem, TestCase, ValidationError
from assay.reward import FractionReward, WeightedFractionReward

MakeJudgement = Callable[..., Judgement]


def test_fraction(make: MakeJudgement, problem: Problem) -> None:
    r = FractionReward()(make("accepted", "wrong_answer", "accepted"), problem)
    assert r.value == pytest.approx(2 / 3)
    assert r.components == {"passed": 2.0, "total": 3.0} and "2/3" in r.reason


def test_fraction_counts_tests_that_never_ran(make: MakeJudgement, problem: Problem) -> None:
    # The judge stops early (compile error, stop_on_failure): unrun tests have not passed.
    assert FractionReward()(make("accepted", "wrong_answer"), problem).value == pytest.approx(1 / 3)
    assert FractionReward()(make("compile_error"), problem).value == 0.0


def test_weighted(make: MakeJudgement, problem: Problem) -> None:
    fn = WeightedFractionReward()
    # weights 1, 2, 7
    assert fn(make("accepted", "accepted", "wrong_answer"), problem).value == pytest.approx(0.3)
    assert fn(make("wrong_answer", "wrong_answer", "accepted"), problem).value == pytest.approx(0.7)
    assert fn(make("accepted", "accepted", "accepted"), problem).value == 1.0
    r = fn(make("accepted", "wrong_answer"), problem)
    assert r.components == {"passed_weight": 1.0, "total_weight": 10.0}


def test_weighted_equal_weights_is_fraction(make: MakeJudgement) -> None:
    p = Problem("q", [TestCase(input="", expected="") for _ in range(4)])
    j = make("accepted", "wrong_answer", "accepted", "accepted")
    assert WeightedFractionReward()(j, p).value == FractionReward()(j, p).value == 0.75


def test_zero_weight_test_counts_nothing(make: MakeJudgement) -> None:
    p = Problem("q", [TestCase(input="", expected="", weight=w) for w in (0.0, 1.0)])
    assert WeightedFractionReward()(make("wrong_answer", "accepted"), p).value == 1.0


@pytest.mark.parametrize("weights", [(0.0, 0.0), (-1.0, 2.0), (float("nan"), 1.0)])
def test_bad_weights(make: MakeJudgement, weights: tuple[float, ...]) -> None:
    p = Problem("q", [TestCase(input="", expected="", weight=w) for w in weights])
    with pytest.raises(ValidationError) as e:
        WeightedFractionReward()(make("accepted", "accepted"), p)
    assert "weight" in e.value.field


def test_result_for_missing_test_is_an_error(make: MakeJudgement, problem: Problem) -> None:
    with pytest.raises(ValidationError, match="has 3 tests"):
        FractionReward()(make(*["accepted"] * 4), problem)


@pytest.mark.parametrize("fn", [FractionReward(), WeightedFractionReward()])
def test_sandbox_error_is_none(make: MakeJudgement, problem: Problem, fn: assay.RewardFn) -> None:
    r = fn(make("accepted", "accepted", "sandbox_error"), problem)
    assert r.value is None and r.reason
