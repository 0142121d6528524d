"""What the verification sandbox is given: protected paths reset, runner configs dropped, hidden
tests on top, and which path (fast or pytest) runs them."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable

from assay.sandbox import RunRequest
from assay.sessions._verify_run import (
    external_imports,
    is_runner_config,
    plain_tests,
    prepare,
    run_tests,
    static_ids,
)
from assay.tasks import AgentTask
from assay.types import ExecResult

TASK = AgentTask(
    "t",
    "",
    {"a.py": b"A", "conftest.py": b"C", "vis.py": b"V"},
    {
        "test_h.py": "def test_x():\n    pass\n\n\nclass TestY:\n    def test_z(self):\n        pass\n"
    },
    protected=("vis.py",),
)


def test_prepare_resets_protected_and_drops_planted_configs() -> None:
    snap = {
        "a.py": b"A2",
        "conftest.py": b"EVIL",
        "vis.py": b"V2",
        "sub/pytest.ini": b"x",
        "x.pth": b"import os",
        "test_h.py": b"planted",
    }
    work, edits = prepare(TASK, snap)
    assert edits == ["conftest.py", "sub/pytest.ini", "test_h.py", "vis.py", "x.pth"]
    assert work["a.py"] == b"A2" and work["conftest.py"] == b"C" and work["vis.py"] == b"V"
    assert "sub/pytest.ini" not in work and "x.pth" not in work
    assert work["test_h.py"].startswith(b"def test_x")


def test_runner_configs() -> None:
    for name in (
        "conftest.py",
        "a/pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "sitecustomize.py",
        "usercustomize.py",
        "z.pth",
    ):
        assert is_runner_config(name), name
    assert not is_runner_config("main.py")


def test_fast_path_only_for_plain_tests() -> None:
    plain = AgentTask("t", "", {"a.py": b""}, {"t.py": "def test_a():\n    assert 1\n"})
    assert plain_tests(plain, {"a.py": b""}) == ["t.py::test_a"]
    assert plain_tests(plain, {"conftest.py": b""}) is None  # a conftest needs pytest
    for source in (
        "import pytest\n",
        "def test_a(tmp_path):\n    pass\n",
        "class TestA:\n    pass\n",
        "@dec\ndef test_a():\n    pass\n",
    ):
        task = AgentTask("t", "", {}, {"t.py": source})
        assert plain_tests(task, {}) is None, source
    assert static_ids(TASK) == ["test_h.py::test_x", "test_h.py::TestY::test_z"]


def test_modules_the_tests_import_from_outside_are_guarded() -> None:
    task = AgentTask(
        "t",
        "",
        {"calc.py": b"", "pkg/__init__.py": b""},
        {
            "test_h.py": "import numpy as np\nimport pkg.x\nfrom calc import a\nfrom . import y\n"
            "from hypothesis import given\nimport test_h\n"
        },
    )
    assert external_imports(task) == ["hypothesis", "numpy"]


def _relayed(delay_s: float) -> Callable[[RunRequest], ExecResult]:
    """An executor that answers at once and writes the run's report ``delay_s`` later from
    another thread, as the gVisor tier's relay does on a busy host."""

    def execute(req: RunRequest) -> ExecResult:
        secret = req.stdin.strip()
        fd = req.pass_fds[0]

        def late() -> None:
            time.sleep(delay_s)
            for msg in ({"id": "test_h.py::test_x", "outcome": "passed"}, {"end": True}):
                os.write(fd, secret + b" " + json.dumps(msg).encode() + b"\n")
            os.close(fd)

        threading.Thread(target=late, daemon=True).start()
        return ExecResult(status="ok", exit_code=0)

    return execute


def test_a_report_relayed_after_the_answer_is_read_whole() -> None:
    task = AgentTask("t", "", {"a.py": b""}, {"test_h.py": "def test_x():\n    pass\n"})
    work, _ = prepare(task, dict(task.files))
    run = run_tests(_relayed(0.5), task, work)
    assert run.complete, "the report was cut short when the run's answer came back first"
    assert run.outcomes == {"test_h.py::test_x": ("passed", "")}


def test_a_failed_executor_does_not_wait_for_a_report() -> None:
    task = AgentTask("t", "", {"a.py": b""}, {"test_h.py": "def test_x():\n    pass\n"})
    work, _ = prepare(task, dict(task.files))

    def broken(req: RunRequest) -> ExecResult:
        raise OSError("no sandbox")  # and the run's copy of the pipe is never closed

    started = time.monotonic()
    run = run_tests(broken, task, work)
    assert run.sandbox_error == "verification run failed: OSError: no sandbox"
    assert time.monotonic() - started < 5
