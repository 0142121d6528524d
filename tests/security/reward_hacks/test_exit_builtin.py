"""Claim: calling exit() from the function does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    exit()\n"
PRELUDE = ""


def test_exit_builtin(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
