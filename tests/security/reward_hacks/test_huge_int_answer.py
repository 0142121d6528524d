"""Claim: an answer Python cannot write in decimal (an int of more than 4300 digits, alone or
inside a container) is judged like any other answer: a wrong one is ``wrong_answer`` with
reward 0, a right one is accepted. It must never crash the judge into ``sandbox_error``,
whose reward is None: a policy that learned to return such ints when unsure would trade
every 0 it deserves for "no feedback".

Both the plain comparison (EvalPlus, APPS...) and a HumanEval assertion judged on the trusted
side (``python_op``) are tried, and a test that expects a huge int (HumanEval+ has some)
through the executor, whose cache key covers the expected values.
"""

from __future__ import annotations

import pytest

from assay import LocalExecutor, Runner
from assay.judge import Judge, Problem, Submission, TestCase

HUGE = 7**6000  # 5,071 decimal digits


def _problem(expected: object, **options: object) -> Problem:
    return Problem(
        "huge",
        [
            TestCase(
                "call",
                "0",
                expected_value=expected,
                options={"fn_name": "f", "args": [6000], **options},
            )
        ],
    )


@pytest.mark.parametrize("options", [{}, {"python_op": "=="}])
@pytest.mark.parametrize(
    "answer",
    [
        "7 ** n + 1",  # a huge wrong int
        "[7 ** n]",  # one inside a list
        "{'k': 7 ** n}",  # inside a dict
    ],
)
def test_a_huge_wrong_answer_is_wrong_not_a_judge_failure(
    runner: Runner, options: dict[str, object], answer: str
) -> None:
    for expected in (HUGE, 3):
        j = Judge(runner).judge(
            Submission(_problem(expected, **options), f"def f(n):\n    return {answer}\n")
        )
        assert (j.verdict, j.reward) == ("wrong_answer", 0.0), (expected, j.reason)


@pytest.mark.parametrize("options", [{}, {"python_op": "=="}])
def test_a_huge_right_answer_is_accepted(runner: Runner, options: dict[str, object]) -> None:
    j = Judge(runner).judge(Submission(_problem(HUGE, **options), "def f(n):\n    return 7 ** n\n"))
    assert j.verdict == "accepted", j.reason


def test_the_executor_judges_tests_that_expect_huge_ints(runner: Runner) -> None:
    with LocalExecutor(runner, slots=1, records="off") as ex:
        results = ex.run(
            [
                Submission(_problem(HUGE), "def f(n):\n    return 7 ** n\n"),
                Submission(_problem(HUGE), "def f(n):\n    return 7 ** n - 1\n"),
            ]
        )
    assert [r.verdict for r in results] == ["accepted", "wrong_answer"], [r.reason for r in results]
