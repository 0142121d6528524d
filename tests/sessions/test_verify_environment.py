"""What is wrong before the agent does anything is the task's fault: a missing dependency,
a test file the task does not change that fails to collect, a pytest that cannot start —
``sandbox_error`` with the reason and reward ``None``, never ``failed``. What the agent
breaks is ``failed``, with a reason. Workspaces of real size verify; a limit that is hit
says which."""

from __future__ import annotations

import pytest

from assay import Runner
from assay.defaults import RUN_MAX_FILES
from assay.sessions import Session
from assay.sessions.verify import Verifier
from assay.tasks import AgentTask

BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = BROKEN.replace("a - b", "a + b")
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def _task(files: dict[str, str] | None = None, tests: str = TESTS, **extra: object) -> AgentTask:
    return AgentTask.from_dict(
        {
            "task_id": "calc",
            "instructions": "",
            "files": {"calc.py": BROKEN, **(files or {})},
            "tests": {"tests/test_hidden.py": tests},
            **extra,
        }
    )


def _verify(runner: Runner, task: AgentTask, files: dict[str, str] | None = None) -> object:
    snapshot = {p: b for p, b in task.files.items()}
    snapshot.update({p: t.encode() for p, t in (files or {}).items()})
    return Verifier(task).verify_snapshot(runner.execute, snapshot)


def test_a_missing_dependency_is_the_tasks_fault(runner: Runner) -> None:
    task = _task(tests="import not_installed_anywhere\n\n\n" + TESTS)
    v = _verify(runner, task, {"calc.py": FIXED})
    assert (v.verdict, v.reward, v.step_reward) == ("sandbox_error", None, None)
    assert "'not_installed_anywhere', which is not installed" in v.reason


def test_an_untouched_test_file_that_does_not_collect(runner: Runner) -> None:
    task = _task(
        {"tests/test_other.py": "def test_x(:\n    pass\n"},
        test_names=["tests/test_hidden.py::test_add", "tests/test_other.py::test_x"],
    )
    v = _verify(runner, task, {"calc.py": FIXED})
    assert (v.verdict, v.reward) == ("sandbox_error", None)
    assert "tests/test_other.py, which the task does not change, fails to collect" in v.reason


def test_pytest_that_cannot_start(runner: Runner) -> None:
    task = _task({"pytest.ini": "[pytest]\naddopts = --no-such-option\n"})
    v = _verify(runner, task, {"calc.py": FIXED})
    assert (v.verdict, v.reward) == ("sandbox_error", None)
    assert "pytest cannot start on the task's own workspace (usage error)" in v.reason


def test_what_the_agent_breaks_is_failed_with_a_reason(runner: Runner) -> None:
    task = _task()
    v = _verify(runner, task, {"calc.py": "import not_installed_anywhere\n" + FIXED})
    assert (v.verdict, v.reward) == ("failed", 0.0)
    assert "not_installed_anywhere" in v.reason


def test_a_workspace_of_thousands_of_files_verifies(runner: Runner) -> None:
    files = {f"pkg/m{i // 100}/mod{i}.py": f"X = {i}\n" for i in range(3000)}
    task = _task(files)
    v = _verify(runner, task, {"calc.py": FIXED})
    assert (v.verdict, v.reward) == ("accepted", 1.0), v.reason


def test_a_limit_that_is_hit_is_named(runner: Runner) -> None:
    files = {f"d{i // 1000}/f{i}.txt": "" for i in range(RUN_MAX_FILES + 1)}
    v = _verify(runner, _task(files))
    assert (v.verdict, v.reward) == ("sandbox_error", None)
    assert f"over the limit of {RUN_MAX_FILES} files per run (assay.defaults.RUN_MAX_FILES)" in (
        v.reason
    )


def test_the_workspace_does_not_take_the_tests_memory(runner: Runner) -> None:
    """The workspace is staged in the run's memory (a tmpfs): the task's memory limit is the
    tests' own on top of it. A 100 MiB workspace left these tests 60 of their 160 MiB, and
    the task could not be verified (sandbox_error: its own workspace's run did not end)."""
    tests = TESTS.replace("    assert", "    ballast = bytearray(80 << 20)\n    assert")
    blob = "x" * (100 << 20)
    task = _task({"blob.bin": blob}, tests, limits={"memory_mb": 160, "time_s": 30})
    v = _verify(runner, task, {"calc.py": FIXED})
    assert (v.verdict, v.reward) == ("accepted", 1.0), v.reason


@pytest.mark.slow
def test_a_session_holds_a_workspace_larger_than_its_default_disk(runner: Runner) -> None:
    """280 MiB of files (the session's default disk is 256 MiB): the session is sized for
    the workspace, which verifies."""
    blob = bytes(range(256)) * 4096  # 1 MiB
    files = {f"data/b{i}.bin": blob for i in range(280)}
    task = AgentTask(
        "big", "", {**files, "calc.py": FIXED.encode()}, {"tests/test_hidden.py": TESTS}
    )
    with Session.for_task(runner, task) as session:
        assert session.exec("du -sm data | cut -f1").stdout.strip() == b"280"
        v = session.verify()
    assert (v.verdict, v.reward) == ("accepted", 1.0), v.reason


def test_session_limits_follow_the_workspace() -> None:
    from assay.sessions import SessionLimits
    from assay.sessions.verify import limits_for

    assert limits_for(bytes(10 << 20)) == SessionLimits()
    big = limits_for(bytes(300 << 20), SessionLimits(cpu_s=60))
    assert (big.cpu_s, big.disk_mb, big.memory_mb) == (60, 664, 1156)
