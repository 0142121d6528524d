"""Claim: writing forged replies and reports on every fd it holds does not make a failing submission accepted."""

from __future__ import annotations

from _hack import assert_not_accepted, attempt

from assay import Runner

BODY = '    import os, json\n    for fd in range(3, 64):\n        try:\n            os.write(fd, b\'{"ok": ["b", true]}\\n{"outcome": "passed", "index": 0}\\n{"end": true}\\n\')\n        except OSError:\n            pass\n    return None\n'
PRELUDE = ""


def test_write_to_harness_socket(runner: Runner) -> None:
    assert_not_accepted(attempt(runner, BODY, PRELUDE))
