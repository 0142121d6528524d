from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from assay import Judgement, RewardResult, TestResult
from assay.reward.base import unusable

MakeJudgement = Callable[..., Judgement]


def test_result_is_frozen() -> None:
    r = RewardResult(1.0, "ok", {"binary": 1.0})
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.value = 0.0  # type: ignore[misc]
    assert RewardResult(None, "x").components == {}


def test_unusable_on_overall_sandbox_error(make: MakeJudgement) -> None:
    r = unusable(make("accepted", "sandbox_error"))
    assert r is not None and r.value is None and "sandbox_error" in r.reason


def test_unusable_on_any_test_sandbox_error() -> None:
    # A judgement whose overall verdict hides a sandbox_error in one test is still unusable.
    j = Judgement(
        "wrong_answer",
        [TestResult(0, "wrong_answer"), TestResult(1, "sandbox_error", message="zygote died")],
        0.0,
    )
    r = unusable(j)
    assert r is not None and r.value is None and "zygote died" in r.reason


def test_usable(make: MakeJudgement) -> None:
    assert unusable(make("accepted", "wrong_answer")) is None
