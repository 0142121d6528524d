from __future__ import annotations

from collections.abc import Callable

import pytest

from assay import Judgement, Problem, RewardResult, Submission, ValidationError
from assay.reward import CompositeReward, EfficiencyReward, MemoryReward

MakeJudgement = Callable[..., Judgement]


class Fixed:
    """An in-memory reward with a fixed answer."""

    def __init__(self, value: float | None) -> None:
        self.value = value
        self.seen: Submission | None = None
        self.closed = False

    def __call__(
        self, judgement: Judgement, problem: Problem, *, submission: Submission | None = None
    ) -> RewardResult:
        self.seen = submission
        return RewardResult(self.value, f"fixed {self.value}")

    def close(self) -> None:
        self.closed = True


def test_weighted_and_normalized(make: MakeJudgement, problem: Problem) -> None:
    c = CompositeReward(
        {"binary": 1.0, "efficiency": 0.25},
        components={"efficiency": EfficiencyReward(reference_cpu_s=0.3)},
    )
    # accepted, 3 x 0.2 s against 0.3 s: efficiency 0.5
    r = c(make(*["accepted"] * 3, cpu=0.2), problem)
    assert r.value == pytest.approx((1.0 + 0.25 * 0.5) / 1.25)
    assert r.components == {"binary": 1.0, "efficiency": pytest.approx(0.5)}
    assert c(make("wrong_answer"), problem).value == 0.0


def test_not_normalized(make: MakeJudgement, problem: Problem) -> None:
    c = CompositeReward({"binary": 1.0, "fraction": 0.5}, normalize=False)
    assert c(make("accepted", "accepted", "accepted"), problem).value == pytest.approx(1.5)


def test_registry_names_and_metadata_references(make: MakeJudgement, problem: Problem) -> None:
    c = CompositeReward({"fraction": 1.0, "weighted": 1.0, "memory": 2.0})
    # fraction 2/3, weighted 3/10, memory: 16 MiB vs 32 MiB reference -> 1.0 (but not accepted: 0)
    r = c(make("accepted", "accepted", "wrong_answer"), problem)
    assert r.value == pytest.approx((2 / 3 + 0.3 + 0.0) / 4)


def test_none_component_with_weight_makes_none(make: MakeJudgement, problem: Problem) -> None:
    c = CompositeReward({"binary": 1.0, "q": 0.1}, components={"q": Fixed(None)})
    r = c(make("accepted"), problem)
    assert r.value is None and "q: fixed None" in r.reason
    assert r.components == {"binary": 1.0, "q": None}


def test_none_component_with_zero_weight_is_ignored(make: MakeJudgement, problem: Problem) -> None:
    c = CompositeReward({"binary": 1.0, "q": 0.0}, components={"q": Fixed(None)})
    r = c(make("accepted"), problem)
    assert r.value == 1.0 and r.components["q"] is None


def test_sandbox_error_is_none(make: MakeJudgement, problem: Problem) -> None:
    c = CompositeReward({"binary": 1.0, "q": 1.0}, components={"q": Fixed(1.0)})
    r = c(make("accepted", "sandbox_error"), problem)
    assert r.value is None and "sandbox_error" in r.reason


def test_submission_is_passed_and_close(make: MakeJudgement, problem: Problem) -> None:
    fixed = Fixed(0.5)
    c = CompositeReward({"q": 1.0}, components={"q": fixed})
    sub = Submission(problem, "print(1)")
    assert c(make("accepted"), problem, submission=sub).value == 0.5
    assert fixed.seen is sub
    c.close()
    assert fixed.closed


def test_quality_none_without_ruff_makes_none(
    make: MakeJudgement, problem: Problem, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("assay.defaults.RUFF_PATHS", ("/usr/nonexistent/ruff",))
    c = CompositeReward({"binary": 1.0, "quality": 0.1})
    r = c(make("accepted"), problem, submission=Submission(problem, "print(1)\n"))
    assert r.value is None and "ruff not found" in r.reason
    c.close()


@pytest.mark.parametrize(
    ("weights", "field"),
    [
        ({}, "weights"),
        ({"binary": -1.0}, "weights.binary"),
        ({"binary": float("nan")}, "weights.binary"),
        ({"binary": 0.0}, "weights"),
        ({"composite": 1.0}, "weights.composite"),
        ({"nope": 1.0}, "reward"),
    ],
)
def test_bad_weights(weights: dict[str, float], field: str) -> None:
    with pytest.raises(ValidationError) as e:
        CompositeReward(weights)
    assert e.value.field == field


def test_component_without_weight() -> None:
    with pytest.raises(ValidationError, match="no weight for extra"):
        CompositeReward({"binary": 1.0}, components={"extra": Fixed(1.0)})


def test_efficiency_and_memory_instances(make: MakeJudgement, problem: Problem) -> None:
    c = CompositeReward(
        {"efficiency": 1.0, "memory": 1.0},
        components={"efficiency": EfficiencyReward(0.6), "memory": MemoryReward(2**20)},
    )
    # efficiency 1.0 (0.3 s vs 0.6 s); memory: 16 MiB vs floored 8 MiB -> 0.5
    r = c(make(*["accepted"] * 3, cpu=0.1), problem)
    assert r.value == pytest.approx(0.75)
