"""Claim: reading expected values from the caller's frames does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    import sys\n    f = sys._getframe(1)\n    while f is not None:\n        for v in list(f.f_locals.values()):\n            if isinstance(v, bool): return v\n        f = f.f_back\n    return None\n"
PRELUDE = ""


def test_caller_frame(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
