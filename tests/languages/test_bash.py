"""Bash scripts end to end: run by /bin/bash inside the sandbox, within a run's limits."""

from __future__ import annotations

import os

import pytest

from assay import Limits, Runner
from assay.languages.bash import BASH
from assay.types import ExecResult

if not os.access(BASH, os.X_OK):
    pytest.skip(f"no {BASH} on this host", allow_module_level=True)


def run(runner: Runner, code: str, stdin: str = "", **limits: object) -> ExecResult:
    lim = Limits(**{"time_s": 2.0, "memory_mb": 128, **limits})  # type: ignore[arg-type]
    return runner.run(code, "sh", stdin, lim)


def test_hello_and_stdin(runner: Runner) -> None:
    code = 'read -r a b\necho "hello $a $b"\necho "$(( 6 * 7 ))" | tr 4 X\n'
    result = run(runner, code, "brave world\n")
    assert (result.status, result.stdout) == ("ok", b"hello brave world\nX2\n"), result


def test_syntax_error_is_a_runtime_error_with_the_message(runner: Runner) -> None:
    result = run(runner, "if then fi\n")
    assert result.status == "runtime_error"
    assert b"syntax error" in result.stderr, result.stderr


def test_exit_status_is_a_runtime_error(runner: Runner) -> None:
    result = run(runner, "set -e\nfalse\necho unreachable\n")
    assert (result.status, result.exit_code, result.stdout) == ("runtime_error", 1, b"")


def test_infinite_loop_hits_the_time_limit(runner: Runner) -> None:
    assert run(runner, "while :; do :; done\n", time_s=0.5).status == "time_limit"


def test_memory_bomb_hits_the_memory_limit(runner: Runner) -> None:
    result = run(runner, "s=x\nwhile :; do s=$s$s; done\n", time_s=5.0)
    assert result.status == "memory_limit", result
