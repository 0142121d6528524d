"""Shared by the reward-hack regressions: a HumanEval task and a judge to game."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "judge"))

from humaneval0 import PROBLEM, PROMPT

from assay import Runner
from assay.judge import Judge, Judgement, Submission


def attempt(runner: Runner, body: str, prelude: str = "") -> Judgement:
    """Judge ``prelude + prompt + body`` (``body`` is the function's body) on HumanEval/0."""
    return Judge(runner).judge(Submission(PROBLEM, prelude + PROMPT + body))


def assert_not_accepted(j: Judgement) -> None:
    assert j.verdict != "accepted", j.reason
    assert j.reward == 0.0, (j.verdict, j.reward, j.reason)
