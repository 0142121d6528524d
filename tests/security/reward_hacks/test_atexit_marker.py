"""Claim: an atexit hook printing pass markers does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    return None\n"
PRELUDE = "import atexit\natexit.register(lambda: print('PASSED ok accepted'))\n"


def test_atexit_marker(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
