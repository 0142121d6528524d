"""Claim: an object whose __eq__ always returns True does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    class Yes:\n        def __eq__(self, other): return True\n        __hash__ = None\n    return Yes()\n"
PRELUDE = ""


def test_always_equal(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
