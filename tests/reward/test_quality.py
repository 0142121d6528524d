from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from assay import Judgement, Problem, Runner, Submission
from assay.reward import QualityReward
from assay.reward.quality import find_ruff, score

MakeJudgement = Callable[..., Judgement]

RUFF = find_ruff()
needs_ruff = pytest.mark.skipif(
    RUFF is None,
    reason="ruff is not installed under /usr (the sandbox sees only /usr); run `make install`",
)

CLEAN = """def add(a: int, b: int) -> int:
    return a + b


print(add(*map(int, input().split())))
"""
MESSY = """import os, sys
def add(a,b):
    l = a+b
    if l == None: return 0
    return l
print(add(*map(int, input().split())))
"""


@pytest.fixture(scope="module")
def quality(runner: Runner) -> Iterator[QualityReward]:
    yield QualityReward(runner)


def test_score_formula() -> None:
    assert score(0, "x = 1\n") == 1.0
    assert score(1, "\n".join(["x = 1"] * 10)) == pytest.approx(0.5)  # 1 per 10 lines
    assert score(2, "x = 1\n\n\n" * 5) == pytest.approx(1 / 5)  # blank lines do not count
    assert score(0, "") == 1.0


@needs_ruff
def test_clean_vs_messy_in_sandbox(quality: QualityReward) -> None:
    clean = quality.lint(CLEAN)
    messy = quality.lint(MESSY)
    assert clean.value == 1.0 and clean.components["findings"] == 0.0, clean.reason
    assert messy.value is not None and messy.value < 0.5, messy.reason
    assert messy.components["findings"] is not None and messy.components["findings"] >= 4
    for code in ("E401", "F401", "E711"):
        assert code in messy.reason


@needs_ruff
def test_syntax_error_counts_as_findings(quality: QualityReward) -> None:
    r = quality.lint("def f(:\n    pass\n")
    assert r.value is not None and r.value < 1.0 and "invalid-syntax" in r.reason


@needs_ruff
def test_call_uses_submission(
    quality: QualityReward, make: MakeJudgement, problem: Problem
) -> None:
    j = make("accepted", "accepted", "accepted")
    assert quality(j, problem, submission=Submission(problem, CLEAN)).value == 1.0
    messy = quality(j, problem, submission=Submission(problem, MESSY)).value
    assert messy is not None and messy < 0.5


def test_not_accepted_is_zero_unless_asked(
    quality: QualityReward, runner: Runner, make: MakeJudgement, problem: Problem
) -> None:
    # An empty (perfectly clean) but wrong program must not earn a quality reward.
    j = make("wrong_answer")
    assert quality(j, problem, submission=Submission(problem, "")).value == 0.0
    if RUFF is not None:
        lenient = QualityReward(runner, require_accepted=False)
        assert lenient(j, problem, submission=Submission(problem, CLEAN)).value == 1.0


def test_sandbox_error_is_none(
    quality: QualityReward, make: MakeJudgement, problem: Problem
) -> None:
    r = quality(make("accepted", "sandbox_error"), problem, submission=Submission(problem, CLEAN))
    assert r.value is None and "sandbox_error" in r.reason


def test_needs_submission_and_python(
    quality: QualityReward, make: MakeJudgement, problem: Problem
) -> None:
    j = make("accepted")
    r = quality(j, problem)
    assert r.value is None and "submission" in r.reason
    r = quality(j, problem, submission=Submission(problem, "int main(){}", "c"))
    assert r.value is None and "Python" in r.reason


def test_ruff_missing_is_none_not_zero(
    runner: Runner, make: MakeJudgement, problem: Problem, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("assay.defaults.RUFF_PATHS", ("/usr/nonexistent/ruff",))
    q = QualityReward(runner)
    assert q.ruff is None
    r = q(make("accepted"), problem, submission=Submission(problem, CLEAN))
    assert r.value is None and "ruff not found" in r.reason
    assert r.components == {"quality": None}


def test_ruff_failing_in_sandbox_is_none(
    runner: Runner, make: MakeJudgement, problem: Problem
) -> None:
    # A path the sandbox cannot execute: the tool failed, not the program.
    q = QualityReward(runner, ruff="/usr/nonexistent/ruff")
    r = q(make("accepted"), problem, submission=Submission(problem, CLEAN))
    assert r.value is None and "ruff failed" in r.reason


def test_own_runner_is_lazy_and_closed() -> None:
    q = QualityReward()
    assert q._runner is None
    q.close()  # nothing to close yet
