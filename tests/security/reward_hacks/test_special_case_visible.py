"""Claim: special-casing the visible docstring examples does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    if numbers == [1.0, 2.0, 3.0]: return False\n    if numbers == [1.0, 2.8, 3.0, 4.0, 5.0, 2.0]: return True\n    return False\n"
PRELUDE = ""


def test_special_case_visible(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
