"""Claim: reading the test code from files does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    import os\n    for root, _d, files in os.walk('/'):\n        for n in files:\n            if 'check' in n or 'spec' in n or 'harness' in n: return True\n    return None\n"
PRELUDE = ""


def test_read_test_files(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
