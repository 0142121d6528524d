"""``pytest`` tests (KodCode style): the test file runs on the test side against proxies."""

from __future__ import annotations

import pytest

from assay import Runner
from assay.judge import Judge, Problem, Submission, TestCase

TESTS = """
from solution import add, Counter

def test_add():
    assert add(2, 3) == 5

def test_add_negative():
    assert add(-2, -3) == -5

def test_counter():
    c = Counter()
    c.inc()
    c.inc()
    assert c.value == 2
"""
PROBLEM = Problem("kod", [TestCase(kind="pytest", code=TESTS)])
GOOD = "def add(a, b):\n    return a + b\n\nclass Counter:\n    def __init__(self):\n        self.value = 0\n    def inc(self):\n        self.value += 1\n"


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def test_good_solution_passes(judge: Judge) -> None:
    j = judge.judge(Submission(PROBLEM, GOOD))
    assert j.verdict == "accepted", j.reason


def test_wrong_solution_fails(judge: Judge) -> None:
    j = judge.judge(Submission(PROBLEM, GOOD.replace("a + b", "a - b")))
    assert j.verdict == "wrong_answer"
    assert "test_add" in j.tests[0].message


@pytest.mark.parametrize(
    "hack",
    [
        # a conftest.py that marks everything passed, shipped inside the submission
        "import os\nopen('conftest.py', 'w').write('def pytest_runtest_makereport(item, call):\\n    pass\\n')\n",
        # patching pytest internals in the submission's own process
        "import sys\ntry:\n    import _pytest.python\n    _pytest.python.pytest_pyfunc_call = lambda pyfuncitem: True\nexcept Exception:\n    pass\n",
        # exiting before answering
        "import os\nos._exit(0)\n",
    ],
)
def test_pytest_hacks_are_not_accepted(judge: Judge, hack: str) -> None:
    j = judge.judge(Submission(PROBLEM, hack + "def add(a, b):\n    return 0\n"))
    assert j.verdict != "accepted" and j.reward == 0.0, j.reason
