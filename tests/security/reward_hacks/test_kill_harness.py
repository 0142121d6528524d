"""Claim: killing every process it can see does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    import os, signal\n    try:\n        os.kill(-1, signal.SIGKILL)\n    except OSError:\n        pass\n    return None\n"
PRELUDE = ""


def test_kill_harness(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
