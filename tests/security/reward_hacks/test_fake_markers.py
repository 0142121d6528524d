"""Claim: printing fake pass markers on stdout does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = "    print('all tests passed', flush=True)\n    return None\n"
PRELUDE = 'print(\'{"outcome": "passed", "index": 0}\')\nprint(\'{"end": true}\')\n'


def test_fake_markers(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
