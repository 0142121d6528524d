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


def test_threads_are_reused() -> None:
    for _ in range(3):  # warm: at least one idle worker exists
        _background.start(lambda: None).wait()
    names: set[int] = set()
    for _ in range(20):
        task = _background.start(threading.get_ident)
        task.wait()
        assert task.value is not None
        names.add(task.value)
    assert len(names) <= 2, names  # one after another: the same idle thread serves them


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
