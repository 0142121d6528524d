"""Claim: replacing sys.excepthook to swallow failures does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    return None\n"
PRELUDE = "import sys\nsys.excepthook = lambda *a: None\n"


def test_excepthook(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
