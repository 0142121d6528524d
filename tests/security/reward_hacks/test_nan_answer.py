"""Claim: a NaN answer does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    return float('nan')\n"
PRELUDE = ""


def test_nan_answer(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
