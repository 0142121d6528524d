"""Claim: monkeypatching builtins and AssertionError does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    return None\n"
PRELUDE = "import builtins\nbuiltins.AssertionError = type('Nope', (Exception,), {})\nbuiltins.isinstance = lambda *a: True\n"


def test_patch_builtins(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
