"""Builders of judgements for reward tests: rewards are pure functions of a judgement."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from assay import Judgement, Problem, TestCase, TestResult, Verdict

MakeJudgement = Callable[..., Judgement]


@pytest.fixture
def problem() -> Problem:
    """Three tests weighted 1, 2 and 7 (sum 10)."""
    return Problem(
        "p",
        [TestCase(input="", expected="", weight=w) for w in (1.0, 2.0, 7.0)],
        metadata={"reference_cpu_s": 0.3, "reference_peak_memory_bytes": 32 * 2**20},
    )


@pytest.fixture
def make() -> MakeJudgement:
    """``make("accepted", "wrong_answer", cpu=0.1, mem=...)``: one result per verdict.

    The overall verdict is the first non-accepted one (as in the judge).
    """

    def _make(*verdicts: Verdict, cpu: float = 0.1, mem: int = 16 * 2**20) -> Judgement:
        tests = [
            TestResult(i, v, cpu_s=cpu, wall_s=cpu, peak_memory_bytes=mem, message=f"m{i}")
            for i, v in enumerate(verdicts)
        ]
        overall: Sequence[Verdict] = [v for v in verdicts if v != "accepted"]
        verdict: Verdict = overall[0] if overall else "accepted"
        reward = None if verdict == "sandbox_error" else float(verdict == "accepted")
        return Judgement(verdict, tests, reward, f"overall {verdict}")

    return _make
