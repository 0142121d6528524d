from __future__ import annotations

import pytest

from assay import Limits, Runner, ValidationError
from assay.judge import Judge, Problem, Submission, TestCase

ADD = Problem(
    "add",
    [TestCase(input="1 2\n", expected="3\n"), TestCase(input="40 2\n", expected="42\n")],
    limits=Limits(time_s=1, memory_mb=128),
)


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def test_accepted(judge: Judge) -> None:
    j = judge.judge(Submission(ADD, "a, b = map(int, input().split())\nprint(a + b)"))
    assert (j.verdict, j.reward, j.passed, j.total) == ("accepted", 1.0, 2, 2)


def test_wrong_answer_names_the_test(judge: Judge) -> None:
    j = judge.judge(Submission(ADD, "print(3)"))
    assert j.verdict == "wrong_answer" and j.reward == 0.0
    assert [t.verdict for t in j.tests] == ["accepted", "wrong_answer"]
    assert "test 1" in j.reason


def test_exit_zero_without_output_is_not_accepted(judge: Judge) -> None:
    j = judge.judge(Submission(ADD, "import os\nos._exit(0)"))
    assert j.verdict == "wrong_answer"


def test_compile_error_stops(judge: Judge) -> None:
    j = judge.judge(Submission(ADD, "int main( {", "c"))
    assert j.verdict == "compile_error" and len(j.tests) == 1


def test_time_limit(judge: Judge) -> None:
    j = judge.judge(Submission(ADD, "while True: pass"), stop_on_failure=True)
    assert j.verdict == "time_limit" and len(j.tests) == 1


def test_problem_without_tests_is_an_error() -> None:
    with pytest.raises(ValidationError) as info:
        Problem("empty", [])
    assert info.value.field == "tests"
