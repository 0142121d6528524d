"""``script`` tests: the assertions run in a sandbox that never runs the submission."""

from __future__ import annotations

import pytest
from humaneval0 import PROBLEM, PROMPT, SOLUTION

from assay import Limits, Runner
from assay.judge import Judge, Problem, Submission, TestCase


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def test_reference_solution_is_accepted(judge: Judge) -> None:
    j = judge.judge(Submission(PROBLEM, PROMPT + SOLUTION))
    assert (j.verdict, j.reward) == ("accepted", 1.0), j.reason


def test_wrong_solution_fails(judge: Judge) -> None:
    j = judge.judge(Submission(PROBLEM, PROMPT + "    return True\n"))
    assert j.verdict == "wrong_answer"
    assert "AssertionError" in j.tests[0].message


def test_raising_solution_is_a_runtime_error(judge: Judge) -> None:
    j = judge.judge(Submission(PROBLEM, PROMPT + "    raise ValueError('no')\n"))
    assert j.verdict == "runtime_error"


def test_looping_solution_hits_the_time_limit(judge: Judge) -> None:
    problem = Problem(PROBLEM.id, PROBLEM.tests, limits=Limits(time_s=0.5))
    j = judge.judge(Submission(problem, PROMPT + "    while True: pass\n"))
    assert j.verdict == "time_limit"


def test_mbpp_style_asserts_and_setup(judge: Judge) -> None:
    problem = Problem(
        "mbpp-like",
        [
            TestCase(kind="script", code="assert add(1, 2) == 3"),
            TestCase(kind="script", code="import math\nassert math.isclose(add(0.1, 0.2), 0.3)"),
            TestCase(
                kind="script", code="assert add(*PAIR) == 10", options={"setup": "PAIR = (4, 6)"}
            ),
            TestCase(kind="script", code="assert add(2, 2) == 5"),
        ],
    )
    j = judge.judge(Submission(problem, "def add(a, b):\n    return a + b\n"))
    assert [t.verdict for t in j.tests] == ["accepted", "accepted", "accepted", "wrong_answer"]


def test_stop_on_failure_ends_the_harness_at_the_first_failed_test(judge: Judge) -> None:
    problem = Problem(
        "mbpp-like-loop",
        [
            TestCase(kind="script", code="assert add(1, 2) == 3"),
            TestCase(kind="script", code="assert add(2, 2) == 5"),
            TestCase(kind="script", code="assert add(0, 0) == 0"),  # the program loops here
        ],
        limits=Limits(time_s=1),
    )
    code = "def add(a, b):\n    while a == 0: pass\n    return a + b\n"
    j = judge.judge(Submission(problem, code), stop_on_failure=True)
    assert [t.verdict for t in j.tests] == ["accepted", "wrong_answer"]
    assert j.verdict == "wrong_answer"
    j = judge.judge(Submission(problem, code))
    assert [t.verdict for t in j.tests] == ["accepted", "wrong_answer", "time_limit"]
    assert j.verdict == "wrong_answer"


def test_unparsable_or_hostile_source_is_a_runtime_error(judge: Judge) -> None:
    for code in (PROMPT + "    return (\n", "x = " + "(" * 100_000 + ")" * 100_000):
        j = judge.judge(Submission(PROBLEM, code))
        assert j.verdict == "runtime_error", j.reason


def test_returned_iterators_keep_their_python_meaning_on_the_test_side(judge: Judge) -> None:
    problem = Problem(
        "iterators",
        [
            TestCase(kind="script", code="assert evens(4) == [0, 2]"),  # a generator is not a list
            TestCase(kind="script", code="assert list(evens(4)) == [0, 2]"),
            TestCase(kind="script", code="assert tuple(keys({'a': 1})) == ('a',)"),
            TestCase(kind="script", code="assert keys({'a': 1}) == {'a'}"),
            TestCase(kind="script", code="assert span(3) == range(3) and not span(0)"),
        ],
    )
    code = (
        "def evens(n):\n    yield from range(0, n, 2)\n"
        "def keys(d):\n    return d.keys()\n"
        "def span(n):\n    return range(n)\n"
    )
    j = judge.judge(Submission(problem, code))
    assert [t.verdict for t in j.tests] == ["wrong_answer"] + ["accepted"] * 4, j.reason


def test_a_report_line_nested_past_the_parsers_depth_is_skipped() -> None:
    """The trusted side reads the harness's report lines as untrusted data: a line the JSON
    parser cannot descend (a RecursionError, not a ValueError) is skipped like any other
    garbage, and the tests it does not report are judged from the runs' ends."""
    from assay.judge import scripts
    from assay.types import ExecResult

    test = TestCase(kind="script", code="assert True\n")
    done = ExecResult(status="ok", exit_code=0)
    lines = [b"[" * 100_000, b'{"index": 0, "outcome": "passed"}', b'{"end": true}']
    (result,) = scripts._grade([(0, test)], lines, done, done)
    assert result.verdict == "accepted", result
