"""Special checkers: a trusted program that decides whether an output is right.

The checker runs in its own sandbox (never the submission's), with the test's input, the
program's output and the expected answer as files. Conventions:

- ``testlib`` (default): ``checker input.txt output.txt answer.txt``; exit 0 accepts, 1 or 2
  (wrong answer, presentation error) rejects, anything else is a checker failure.
- ``kattis`` (output validators): ``validator input.txt answer.txt feedback/`` with the
  output on stdin; exit 42 accepts, 43 rejects; ``feedback/judgemessage.txt`` is kept.

A checker that fails or crashes is a problem of the task, not of the submission: the test is
a ``sandbox_error`` (reward ``None``), never a wrong answer.
"""

from __future__ import annotations

from ..runner import Runner
from ..types import ExecResult, Limits
from .types import Problem, TestCase, TestResult

CHECKER_LIMITS = Limits(time_s=10.0, memory_mb=1024)


def check(
    runner: Runner, problem: Problem, index: int, test: TestCase, run: ExecResult
) -> TestResult:
    assert problem.checker is not None
    style = str(problem.metadata.get("checker_style", "testlib"))
    language = str(problem.metadata.get("checker_language", "python"))
    files = {"input.txt": test.input, "answer.txt": test.expected or ""}
    if style == "kattis":
        result = runner.run(
            problem.checker,
            language,
            stdin=run.stdout,
            limits=CHECKER_LIMITS,
            files={**files, "feedback/.keep": ""},
            args=["input.txt", "answer.txt", "feedback/"],
            collect=["feedback/judgemessage.txt"],
        )
        accepted, rejected = result.exit_code == 42, result.exit_code == 43
        feedback = result.files.get("feedback/judgemessage.txt", b"")
    else:
        result = runner.run(
            problem.checker,
            language,
            limits=CHECKER_LIMITS,
            files={**files, "output.txt": run.stdout},
            args=["input.txt", "output.txt", "answer.txt"],
        )
        accepted, rejected = result.exit_code == 0, result.exit_code in (1, 2)
        feedback = result.stderr or result.stdout
    message = feedback.decode(errors="replace").strip()[-500:]
    common = (run.cpu_s, run.wall_s, run.peak_memory_bytes)
    if result.status in ("ok", "runtime_error") and (accepted or rejected):
        return TestResult(index, "accepted" if accepted else "wrong_answer", *common, message)
    why = f"checker failed ({result.status}, exit {result.exit_code}): {message}"
    return TestResult(index, "sandbox_error", *common, why[:500])
