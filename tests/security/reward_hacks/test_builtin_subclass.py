"""Claim: an int subclass whose __eq__ lies does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    class B(int):\n        def __eq__(self, other): return True\n        __hash__ = int.__hash__\n    return B(0)\n"
PRELUDE = ""


def test_builtin_subclass(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
