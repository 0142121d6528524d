"""Special checkers (testlib and Kattis conventions), run in their own sandbox."""

from __future__ import annotations

import pytest

from assay import Limits, Runner
from assay.judge import Judge, Problem, Submission, TestCase

# Accepts any pair of numbers summing to the input n (many right answers).
TESTLIB = """
import sys
n = int(open(sys.argv[1]).read())
try:
    a, b = map(int, open(sys.argv[2]).read().split())
except ValueError:
    print("expected two integers", file=sys.stderr); sys.exit(2)
sys.exit(0 if a + b == n else 1)
"""
KATTIS = """
import sys, os
n = int(open(sys.argv[1]).read())
a, b = map(int, sys.stdin.read().split())
if a + b == n:
    sys.exit(42)
open(os.path.join(sys.argv[3], "judgemessage.txt"), "w").write(f"{a}+{b} is not {n}")
sys.exit(43)
"""


def _problem(checker: str, style: str) -> Problem:
    return Problem(
        "split",
        [TestCase(input="10\n"), TestCase(input="3\n")],
        limits=Limits(time_s=1),
        checker=checker,
        metadata={"checker_style": style},
    )


@pytest.mark.parametrize(("checker", "style"), [(TESTLIB, "testlib"), (KATTIS, "kattis")])
def test_checker_accepts_any_right_answer(runner: Runner, checker: str, style: str) -> None:
    j = Judge(runner).judge(
        Submission(_problem(checker, style), "n = int(input())\nprint(1, n - 1)")
    )
    assert j.verdict == "accepted", j.reason
    j = Judge(runner).judge(Submission(_problem(checker, style), "n = int(input())\nprint(n, 1)"))
    assert j.verdict == "wrong_answer"


def test_kattis_feedback_is_kept(runner: Runner) -> None:
    j = Judge(runner).judge(Submission(_problem(KATTIS, "kattis"), "print(1, 1)"))
    assert "1+1 is not 10" in j.tests[0].message


def test_broken_checker_is_our_fault_not_theirs(runner: Runner) -> None:
    j = Judge(runner).judge(Submission(_problem("raise SystemExit(7)", "testlib"), "print(1, 9)"))
    assert j.verdict == "sandbox_error" and j.reward is None
