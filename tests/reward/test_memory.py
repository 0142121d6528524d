from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from assay import Judgement, Problem, TestCase, ValidationError, defaults
from assay.reward import MemoryReward

MakeJudgement = Callable[..., Judgement]
MiB = 2**20


def test_peak_against_reference(make: MakeJudgement, problem: Problem) -> None:
    r = MemoryReward(reference_peak_memory_bytes=32 * MiB)(make("accepted", mem=64 * MiB), problem)
    assert r.value == pytest.approx(0.5)
    assert r.components["peak_memory_bytes"] == 64 * MiB


def test_peak_is_max_over_tests(make: MakeJudgement, problem: Problem) -> None:
    j = make("accepted", "accepted", mem=20 * MiB)
    j.tests[1] = dataclasses.replace(j.tests[1], peak_memory_bytes=80 * MiB)
    assert MemoryReward(40 * MiB)(j, problem).value == pytest.approx(0.5)


def test_capped_at_one_and_metadata_reference(make: MakeJudgement, problem: Problem) -> None:
    # metadata: 32 MiB
    assert MemoryReward()(make("accepted", mem=10 * MiB), problem).value == 1.0
    assert MemoryReward()(make("accepted", mem=128 * MiB), problem).value == pytest.approx(0.25)


def test_floor(make: MakeJudgement, problem: Problem) -> None:
    floor = defaults.MEMORY_FLOOR_BYTES
    fn = MemoryReward(reference_peak_memory_bytes=floor // 4)
    assert fn(make("accepted", mem=floor // 2), problem).value == 1.0
    assert fn(make("accepted", mem=floor * 2), problem).value == pytest.approx(0.5)


def test_not_accepted_and_sandbox_error(make: MakeJudgement, problem: Problem) -> None:
    assert MemoryReward()(make("memory_limit"), problem).value == 0.0
    r = MemoryReward()(make("accepted", "sandbox_error"), problem)
    assert r.value is None and r.reason


def test_missing_reference(make: MakeJudgement) -> None:
    p = Problem("q", [TestCase(input="", expected="")])
    with pytest.raises(ValidationError, match="reference_peak_memory_bytes"):
        MemoryReward()(make("accepted"), p)
