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


def test_the_guard_is_the_base_class_rule(make: MakeJudgement) -> None:
    """A reward written as Assay's are (a ``score`` only) never scores an unusable
    judgement: the base class answers None first."""
    from assay import Problem, Reward, TestCase

    asked: list[str] = []

    class Always(Reward):
        def score(self, judgement, problem, *, submission=None):  # type: ignore[no-untyped-def]
            asked.append(judgement.verdict)
            return RewardResult(1.0, "always")

    problem = Problem("p", [TestCase("stdio", input="", expected="")])
    assert Always()(make("accepted", "sandbox_error"), problem).value is None
    assert asked == []
    assert Always()(make("accepted", "accepted"), problem).value == 1.0


def test_a_reward_cannot_override_the_guard() -> None:
    from assay import Reward

    with pytest.raises(TypeError, match="score"):

        class Sneaky(Reward):
            def __call__(self, judgement, problem, *, submission=None):  # type: ignore[no-untyped-def]
                return RewardResult(1.0, "")

            def score(self, judgement, problem, *, submission=None):  # type: ignore[no-untyped-def]
                return RewardResult(1.0, "")


def test_every_registered_reward_derives_from_the_base() -> None:
    from assay import Reward
    from assay.reward import REGISTRY

    assert all(issubclass(factory, Reward) for factory in REGISTRY.values())  # type: ignore[arg-type]
