"""The judge's background runs: values and errors come back, threads are reused, and a
forked child starts with a pool of its own."""

from __future__ import annotations

import os
import threading

from assay.judge import _background
from assay.types import ExecResult


def test_a_task_returns_its_value() -> None:
    task = _background.start(lambda: 6 * 7)
    task.wait()
    assert task.done() and task.value == 42 and task.error is None


def test_a_failing_run_is_a_sandbox_error_not_a_crash() -> None:
    def boom() -> ExecResult:
        raise RuntimeError("broken pipe to nowhere")

    result = _background.outcome(_background.start(boom))
    assert result.status == "sandbox_error"
    assert b"broken pipe to nowhere" in result.stderr


def test_done_is_false_while_the_call_runs() -> None:
    release = threading.Event()
    task = _background.start(lambda: release.wait(10))
    assert not task.done()
    release.set()
    task.wait()
    assert task.done() and task.value is True


def _run_threads() -> int:
    return sum(t.name == "assay-run" for t in threading.enumerate())


def test_threads_are_reused() -> None:
    for _ in range(3):  # warm: at least one idle worker exists
        _background.start(lambda: None).wait()
    before = _run_threads()
    for _ in range(50):  # one after another: an idle thread serves each
        task = _background.start(threading.get_ident)
        assert task.wait(10) and task.value is not None
    assert _run_threads() == before


def test_a_forked_child_gets_working_background_threads() -> None:
    _background.start(lambda: None).wait()  # the parent has an idle worker
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            task = _background.start(lambda: "child")
            ok = task.wait(10) and task.value == "child"
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
