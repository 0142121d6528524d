"""``call`` tests: results come back as data and are compared on the trusted side."""

from __future__ import annotations

import pytest

from assay import Limits, Runner
from assay.judge import Judge, Problem, Submission, TestCase


def _call(fn: str, args: list[object], expected: object, **options: object) -> TestCase:
    return TestCase(
        kind="call", options={"fn_name": fn, "args": args, **options}, expected_value=expected
    )


SQUARES = Problem(
    "squares",
    [_call("sq", [2], 4), _call("sq", [3], 9), _call("sq", [-4], 16)],
    limits=Limits(time_s=2, memory_mb=128),
)


@pytest.fixture(scope="module")
def judge(runner: Runner) -> Judge:
    return Judge(runner)


def test_correct_solution_is_accepted(judge: Judge) -> None:
    j = judge.judge(Submission(SQUARES, "def sq(x):\n    return x * x\n"))
    assert (j.verdict, j.passed, j.total, j.reward) == ("accepted", 3, 3, 1.0)


def test_wrong_and_raising(judge: Judge) -> None:
    j = judge.judge(
        Submission(
            SQUARES,
            "def sq(x):\n    if x < 0: raise ValueError('neg')\n    return x * x + (x == 3)\n",
        )
    )
    assert [t.verdict for t in j.tests] == ["accepted", "wrong_answer", "runtime_error"]
    assert j.verdict == "wrong_answer"


@pytest.mark.parametrize(
    "code",
    [
        # an object whose __eq__ always says yes
        "class A:\n    def __eq__(self, o): return True\n    __hash__ = None\ndef sq(x):\n    return A()\n",
        # a builtin subclass that lies
        "class S(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\ndef sq(x):\n    return S(0)\n",
        # exit before answering
        "import sys\ndef sq(x):\n    sys.exit(0)\n",
        "import os\ndef sq(x):\n    os._exit(0)\n",
        # exit at import time
        "raise SystemExit(0)\n",
        # look for the expected value in the caller's frames
        "import sys\ndef sq(x):\n    f = sys._getframe(1)\n    while f:\n        for v in f.f_locals.values():\n            if v == 4 or v == 9 or v == 16: return v\n        f = f.f_back\n    return None\n",
        # NaN tricks
        "def sq(x):\n    return float('nan')\n",
        # print fake pass markers
        "print('accepted ok PASS')\ndef sq(x):\n    return None\n",
    ],
)
def test_reward_hacks_are_not_accepted(judge: Judge, code: str) -> None:
    j = judge.judge(Submission(SQUARES, code))
    assert j.verdict != "accepted"
    assert j.reward == 0.0


def test_float_tolerance_and_containers(judge: Judge) -> None:
    problem = Problem(
        "misc",
        [
            _call("half", [1], 0.5, atol=1e-9),
            _call("pair", [2], (2, [3, {"k": {4}}])),
            _call("gen", [3], [0, 1, 2]),
        ],
    )
    code = "def half(x): return x / 2 + 1e-12\ndef pair(x): return (x, [x + 1, {'k': {x + 2}}])\ndef gen(n):\n    yield from range(n)\n"
    j = judge.judge(Submission(problem, code))
    assert j.verdict == "accepted", j.reason


def test_time_limit_marks_remaining_calls(judge: Judge) -> None:
    problem = Problem("slow", [_call("f", [1], 1), _call("f", [2], 2)], limits=Limits(time_s=0.5))
    j = judge.judge(
        Submission(problem, "def f(x):\n    if x == 2:\n        while True: pass\n    return x\n")
    )
    assert [t.verdict for t in j.tests] == ["accepted", "time_limit"]
    assert j.verdict == "time_limit"
