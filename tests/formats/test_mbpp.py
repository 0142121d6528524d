"""Same program, same verdict, whatever the format (issue 14): MBPP task 2 as ``mbpp``
(script tests) and as ``mbppplus`` (call tests), and HumanEval/2 for a syntax error. A
message is about the submission, never the inside of our call server."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from assay import Runner
from assay.formats import humaneval, mbpp
from assay.formats.evalplus import load as load_plus
from assay.formats.evalplus import with_expected
from assay.judge import Judge, Problem, Submission

CORPORA = Path(__file__).resolve().parents[3] / "shared" / "corpora"
MBPP = CORPORA / "mbpp" / "mbpp-full.jsonl"
MBPP_PLUS = CORPORA / "mbppplus" / "MbppPlus.jsonl.gz"
HUMANEVAL = CORPORA / "humaneval" / "HumanEval.jsonl.gz"

pytestmark = pytest.mark.skipif(not MBPP_PLUS.exists(), reason="corpora not found")

SOLUTION = "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n"
PROGRAMS = {
    "wrong function name": SOLUTION.replace("similar_elements", "common"),
    "sys.exit(0) first": "import sys\nsys.exit(0)\n" + SOLUTION,
    "sys.exit(0) in the function": SOLUTION.replace(
        "return", "import sys; sys.exit(0)\n    return"
    ),
    "syntax error": "def similar_elements(a, b:\n    return a\n",
    "raises on import": "raise ValueError('boom')\n" + SOLUTION,
    "raises in the call": SOLUTION.replace("return", "return 1 / 0 +"),
    "correct": SOLUTION,
}


@pytest.fixture(scope="module")
def both(runner: Runner) -> tuple[Problem, Problem]:
    full = next(
        json.loads(line) for line in MBPP.read_text().splitlines() if '"task_id": 2,' in line
    )
    with gzip.open(MBPP_PLUS, "rt") as fh:
        plus = next(r for r in map(json.loads, fh) if r["task_id"] == "Mbpp/2")
    (plus_problem,) = load_plus([plus], "base")
    return mbpp.problem(full), with_expected(runner, plus_problem)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_program_same_verdict_under_mbpp_and_mbppplus(
    name: str, both: tuple[Problem, Problem], runner: Runner
) -> None:
    judge = Judge(runner)
    script, calls = (judge.judge(Submission(p, PROGRAMS[name])) for p in both)
    assert script.verdict == calls.verdict, (script.reason, calls.reason)
    assert script.verdict == ("accepted" if name == "correct" else "runtime_error")
    for j in (script, calls):
        assert "_assay_" not in j.reason, j.reason
    if name in ("syntax error", "raises on import", "wrong function name"):
        assert script.reason == calls.reason


def test_the_task_s_function_is_required() -> None:
    full = next(
        json.loads(line) for line in MBPP.read_text().splitlines() if '"task_id": 2,' in line
    )
    assert {t.options["requires"][0] for t in mbpp.problem(full).tests} == {"similar_elements"}


@pytest.mark.skipif(not HUMANEVAL.exists(), reason="HumanEval not found")
def test_a_syntax_error_is_told_about_the_submission(runner: Runner) -> None:
    with gzip.open(HUMANEVAL, "rt") as fh:
        recs = [json.loads(line) for line in fh]
    for rec in (recs[2], recs[38]):  # call tests (HumanEval/2) and a script test (/38)
        problem = humaneval.problem(rec)
        j = Judge(runner).judge(Submission(problem, rec["prompt"] + "    return (\n"))
        assert j.verdict == "runtime_error"
        assert j.reason.startswith("test 0: runtime_error: SyntaxError:"), j.reason
        assert "_assay_callserver" not in j.reason and "solution.py" in j.reason
