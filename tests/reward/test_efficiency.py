from __future__ import annotations

from collections.abc import Callable

import pytest

from assay import Judgement, Problem, TestCase, ValidationError, defaults
from assay.reward import EfficiencyReward

MakeJudgement = Callable[..., Judgement]


def test_faster_than_reference_is_capped_at_one(make: MakeJudgement, problem: Problem) -> None:
    r = EfficiencyReward(reference_cpu_s=0.9)(make(*["accepted"] * 3, cpu=0.1), problem)
    assert r.value == 1.0
    assert r.components["cpu_s"] == pytest.approx(0.3)
    assert r.components["reference_cpu_s"] == 0.9


def test_slower_than_reference(make: MakeJudgement, problem: Problem) -> None:
    # 3 tests x 0.2 s = 0.6 s against 0.3 s
    r = EfficiencyReward(reference_cpu_s=0.3)(make(*["accepted"] * 3, cpu=0.2), problem)
    assert r.value == pytest.approx(0.5)


def test_reference_from_problem_metadata(make: MakeJudgement, problem: Problem) -> None:
    # metadata reference_cpu_s = 0.3; measured 3 x 0.3 = 0.9
    r = EfficiencyReward()(make(*["accepted"] * 3, cpu=0.3), problem)
    assert r.value == pytest.approx(1 / 3)


def test_not_accepted_is_zero(make: MakeJudgement, problem: Problem) -> None:
    r = EfficiencyReward(0.3)(make("accepted", "time_limit", cpu=0.001), problem)
    assert r.value == 0.0 and "time_limit" in r.reason


def test_sandbox_error_is_none(make: MakeJudgement, problem: Problem) -> None:
    r = EfficiencyReward(0.3)(make("accepted", "sandbox_error"), problem)
    assert r.value is None and "sandbox_error" in r.reason
    # even with no reference configured at all
    p = Problem("q", [TestCase(input="", expected="")])
    assert EfficiencyReward()(make("sandbox_error"), p).value is None


def test_floor_makes_timer_noise_equal(make: MakeJudgement, problem: Problem) -> None:
    assert defaults.EFFICIENCY_CPU_FLOOR_S > 0
    # Both below the floor (per test): equally trivial programs, both 1.0, whatever the noise.
    fn = EfficiencyReward(reference_cpu_s=0.001)
    assert fn(make(*["accepted"] * 3, cpu=0.008), problem).value == 1.0
    # Above the floor the ratio counts, with the reference floored too (3 tests x 0.01).
    assert fn(make(*["accepted"] * 3, cpu=0.02), problem).value == pytest.approx(0.5)
    # A custom floor.
    r = EfficiencyReward(reference_cpu_s=0.001, floor_s=0.0001)(
        make("accepted", cpu=0.002), problem
    )
    assert r.value == pytest.approx(0.5) and r.components["floor"] == pytest.approx(0.0001)


def test_zero_cpu_does_not_divide_by_zero(make: MakeJudgement, problem: Problem) -> None:
    assert EfficiencyReward(0.3)(make(*["accepted"] * 3, cpu=0.0), problem).value == 1.0


@pytest.mark.parametrize("ref", [0.0, -1.0, float("inf"), "fast"])
def test_bad_reference(make: MakeJudgement, problem: Problem, ref: object) -> None:
    with pytest.raises(ValidationError, match="reference_cpu_s"):
        EfficiencyReward(ref)(make("accepted"), problem)  # type: ignore[arg-type]


def test_missing_reference_names_the_field(make: MakeJudgement) -> None:
    p = Problem("q", [TestCase(input="", expected="")])
    with pytest.raises(ValidationError) as e:
        EfficiencyReward()(make("accepted"), p)
    assert e.value.field == "reference_cpu_s"


@pytest.mark.parametrize("floor", [0.0, -0.1, float("nan")])
def test_bad_floor(floor: float) -> None:
    with pytest.raises(ValidationError, match="floor_s"):
        EfficiencyReward(0.3, floor_s=floor)
