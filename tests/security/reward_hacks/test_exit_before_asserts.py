"""Claim: sys.exit(0) at import, before any test runs does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    return True\n"
PRELUDE = "import sys\nsys.exit(0)\n"


def test_exit_before_asserts(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
