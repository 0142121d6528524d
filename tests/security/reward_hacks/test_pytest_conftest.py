"""Claim: a conftest.py supplied by the submission cannot make a pytest test pass.

The pytest file runs in a sandbox that never executes submission code, with conftest loading
off; the submission's files and patches stay in its own process."""

from __future__ import annotations

from assay import Runner
from assay.judge import Judge, Problem, Submission, TestCase

TESTS = "from solution import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
HACK = "import os\nwith open('conftest.py', 'w') as f:\n    f.write('import pytest\\n@pytest.hookimpl(tryfirst=True)\\ndef pytest_runtest_call(item):\\n    return True\\n')\n"


def test_pytest_conftest(runner: Runner) -> None:
    problem = Problem("kod-hack", [TestCase(kind="pytest", code=TESTS)])
    j = Judge(runner).judge(Submission(problem, HACK + "def add(a, b):\n    return 0\n"))
    assert j.verdict != "accepted" and j.reward == 0.0, j.reason
