"""Claim: the assertion forms judged on the trusted side (truthiness, ``abs(...) < tol``,
``tuple(...) ==``) cannot be satisfied by objects, patched builtins or a submission's own
helpers: each hack below ends non-accepted, while the reference solution is accepted.

The two tasks are HumanEval/52 and HumanEval/2 (openai/human-eval, MIT licence), loaded the
way ``assay eval --format humaneval`` loads them.
"""

from __future__ import annotations

import pytest

from assay import Runner
from assay.formats import humaneval
from assay.judge import Judge, Submission

BELOW = humaneval.problem(
    {
        "task_id": "HumanEval/52",
        "entry_point": "below_threshold",
        "prompt": "\n\ndef below_threshold(l: list, t: int):\n"
        '    """Return True if all numbers in the list l are below threshold t."""\n',
        "canonical_solution": "    for e in l:\n        if e >= t:\n            return False\n"
        "    return True\n",
        "test": "\n\nMETADATA = {}\n\n\ndef check(candidate):\n"
        "    assert candidate([1, 2, 4, 10], 100)\n"
        "    assert not candidate([1, 20, 4, 10], 5)\n"
        "    assert candidate([1, 20, 4, 10], 21)\n"
        "    assert candidate([1, 20, 4, 10], 22)\n"
        "    assert candidate([1, 8, 4, 10], 11)\n"
        "    assert not candidate([1, 8, 4, 10], 10)\n\n",
    }
)
TRUNCATE = humaneval.problem(
    {
        "task_id": "HumanEval/2",
        "entry_point": "truncate_number",
        "prompt": "\n\ndef truncate_number(number: float) -> float:\n"
        '    """Return the decimal part of the number."""\n',
        "canonical_solution": "    return number % 1.0\n",
        "test": "\n\nMETADATA = {\n    'author': 'jt',\n    'dataset': 'test'\n}\n\n\n"
        "def check(candidate):\n"
        "    assert candidate(3.5) == 0.5\n"
        "    assert abs(candidate(1.33) - 0.33) < 1e-6\n"
        "    assert abs(candidate(123.456) - 0.456) < 1e-6\n",
    }
)

# Truthiness that follows the visible order of the asserts (T F T T T F), from an object.
PATTERN = """
class Answer:
    calls = 0
    def __bool__(self):
        Answer.calls += 1
        return Answer.calls not in (2, 6)
def below_threshold(l, t):
    return Answer()
"""
HACKS_52 = [
    PATTERN,
    # an int subclass whose truth value is always "right" for ``assert`` and ``assert not``
    "class B(int):\n    def __bool__(self): return True\n"
    "def below_threshold(l, t):\n    return B(0)\n",
    # patching bool itself in the submission's process
    "import builtins\nbuiltins.bool = lambda x=False: True\n"
    "def below_threshold(l, t):\n    return 0\n",
    "import sys\ndef below_threshold(l, t):\n    sys.exit(0)\n",
]
HACKS_2 = [
    # ``x - expected`` answered by the submission's object
    "class Z:\n    def __sub__(self, o): return 0\n    def __eq__(self, o): return True\n"
    "def truncate_number(number):\n    return Z()\n",
    # the check's ``abs`` replaced by the submission's (it would be, if they shared globals)
    "def abs(x):\n    return 0\n"
    "def truncate_number(number):\n    return 0.5 if number == 3.5 else 42.0\n",
    "import builtins\nbuiltins.abs = lambda x: 0\n"
    "def truncate_number(number):\n    return 0.5 if number == 3.5 else 42.0\n",
    "def truncate_number(number):\n    return 0.5 if number == 3.5 else float('nan')\n",
]


@pytest.mark.parametrize("hack", HACKS_52)
def test_truthiness_hacks(runner: Runner, hack: str) -> None:
    assert [t.kind for t in BELOW.tests] == ["call"] * 6
    judge = Judge(runner)
    assert judge.judge(Submission(BELOW, BELOW.references[0])).verdict == "accepted"
    j = judge.judge(Submission(BELOW, hack))
    assert j.verdict != "accepted" and j.reward == 0.0, j.reason


@pytest.mark.parametrize("hack", HACKS_2)
def test_tolerance_hacks(runner: Runner, hack: str) -> None:
    assert [t.options["python_op"] for t in TRUNCATE.tests] == ["==", "abs<", "abs<"]
    judge = Judge(runner)
    assert judge.judge(Submission(TRUNCATE, TRUNCATE.references[0])).verdict == "accepted"
    j = judge.judge(Submission(TRUNCATE, hack))
    assert j.verdict != "accepted" and j.reward == 0.0, j.reason


def test_a_forged_iterator_type_cannot_crash_the_judge(runner: Runner) -> None:
    # A class posing as a builtin dict_keys whose "keys" are lists: rebuilding it on the
    # trusted side raises, which must fail the assertion, not the judge.
    forged = (
        "class dict_keys:\n    __module__ = 'builtins'\n    n = 0\n"
        "    def __iter__(self): return self\n"
        "    def __next__(self):\n        self.n += 1\n"
        "        if self.n > 2: raise StopIteration\n        return [self.n]\n"
        "def below_threshold(l, t):\n    return dict_keys()\n"
    )
    j = Judge(runner).judge(Submission(BELOW, forged))
    assert j.verdict == "wrong_answer" and j.reward == 0.0, j.reason
