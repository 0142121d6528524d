"""Claim: os._exit(0) inside the function under test does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    import os\n    os._exit(0)\n"
PRELUDE = ""


def test_os_exit_in_call(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
