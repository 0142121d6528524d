"""Shared by the reward-hack regressions: a HumanEval task and a judge to game."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "judge"))

from humaneval0 import PROBLEM, PROMPT, TEST

from assay import Runner
from assay.formats._asserts import check_to_calls
from assay.judge import Judge, Judgement, Problem, Submission

CALLS = Problem(PROBLEM.id, check_to_calls(TEST, "has_close_elements") or [], limits=PROBLEM.limits)


def attempt(runner: Runner, body: str, prelude: str = "") -> tuple[Judgement, Judgement]:
    """Judge ``prelude + prompt + body`` on HumanEval/0 twice: as the script test (asserts
    run in the test-side sandbox) and as the call tests the loader derives from it."""
    code = prelude + PROMPT + body
    judge = Judge(runner)
    return judge.judge(Submission(PROBLEM, code)), judge.judge(Submission(CALLS, code))


def assert_not_accepted(judgements: tuple[Judgement, Judgement]) -> None:
    for j in judgements:
        assert j.verdict != "accepted", j.reason
        assert j.reward == 0.0, (j.verdict, j.reward, j.reason)
