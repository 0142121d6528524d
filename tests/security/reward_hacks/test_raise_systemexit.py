"""Claim: raising SystemExit(0) from the function does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    raise SystemExit(0)\n"
PRELUDE = ""


def test_raise_systemexit(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
