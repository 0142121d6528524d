"""The runner: the one door from the layers above into the sandbox."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

import assay
from assay import ExecResult, Runner
from assay.runner import RunRequest

SRC = Path(assay.__file__).parent


def test_no_layer_above_reaches_through_the_runner_into_its_sandbox() -> None:
    """``runner.sandbox.<anything>`` outside the runner and the sandbox package is a layer
    talking past the one below it: the runner has ``execute``, ``bytecode_magic``,
    ``warm_up`` and ``insecure`` for that."""
    offenders = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel == "runner.py" or rel.startswith("sandbox/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "sandbox"
            ):
                offenders.append(f"{rel}:{node.lineno}")
    assert offenders == []


def test_execute_runs_a_prepared_request(runner: Runner) -> None:
    request = runner.request("print(6 * 7)")
    assert isinstance(request, RunRequest)
    assert runner.execute(request).stdout == b"42\n"
    runner.run("pass")
    assert runner.bytecode_magic is not None and len(runner.bytecode_magic) == 8


def test_failed_compiles_leave_no_build_gate_behind(runner: Runner) -> None:
    for i in range(3):  # distinct sources: each would keep its own gate
        result = runner.run(f"int main(void) {{ return {i} +; }}", "c")
        assert result.status == "compile_error"
    assert runner._building == {}


def test_a_sandbox_error_while_compiling_leaves_no_build_gate(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = ExecResult(
        status="sandbox_error", exit_code=None, signal=None, stdout=b"", stderr=b"x"
    )
    monkeypatch.setattr(runner, "execute", lambda request: broken)
    assert runner.run("int main(void) { return 7; }", "c").status == "sandbox_error"
    assert runner._building == {}


def test_run_async_takes_args_and_collect(runner: Runner) -> None:
    code = "import sys\nopen('out.txt', 'w').write(sys.argv[1])\n"
    result = asyncio.run(runner.run_async(code, args=["hello"], collect=["out.txt"]))
    assert result.status == "ok", result.stderr
    assert result.files["out.txt"] == b"hello"
