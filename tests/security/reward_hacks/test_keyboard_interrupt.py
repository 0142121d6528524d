"""Claim: raising KeyboardInterrupt does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    raise KeyboardInterrupt\n"
PRELUDE = ""


def test_keyboard_interrupt(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
