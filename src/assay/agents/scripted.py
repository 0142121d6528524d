"""Four scripted agents for repair tasks: what ``assay agent demo`` shows, step by step.

Each is a fixed policy (no model), so the rewards they earn show what the verifier pays for:

- ``fixer`` reads the workspace, runs the code, states a diagnosis, writes the fix: rewarded;
- ``tamperer`` plants a conftest, a fake ``pytest`` on PATH, ``sitecustomize.py`` and
  rewrites the visible test: caught (protected edits), not rewarded;
- ``looper`` runs a command that never ends: stopped at its timeout, the session still
  usable afterwards;
- ``breaker`` starts from the fix, then breaks what worked: negative pass-rate delta.

The fixer's "fix" is the task's reference patch applied to the workspace (a scripted agent
knows the answer); the point is the rewards, not the search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..sessions import SessionBase
from ..sessions.verify import VerifyResult
from ..tasks import AgentTask
from ..tasks._git import apply_patch
from ..tasks.patch import parse_patch


@dataclass
class Step:
    """One step of an episode: what the agent did, what it saw, and the verification."""

    action: str
    observation: str = ""
    verify: VerifyResult | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Agent = Callable[[SessionBase, AgentTask], Iterator[Step]]


def _solution(task: AgentTask) -> tuple[str, bytes]:
    path = next(iter(parse_patch(task.reference_patch or "").lines), None) or next(iter(task.files))
    fixed = apply_patch(task.files, task.reference_patch or "", "reference_patch")
    return path, fixed[path]


def _diagnosis(task: AgentTask) -> dict[str, Any]:
    lines = parse_patch(task.reference_patch or "").lines
    return {"lines": {p: sorted(n) for p, n in lines.items()}}


def fixer(s: SessionBase, task: AgentTask) -> Iterator[Step]:
    step = s.exec("ls && head -n 40 solution.py", timeout_s=10)
    yield Step("read the workspace", step.stdout.decode(errors="replace")[-200:])
    step = s.exec("python3 -c 'import solution' && echo imports", timeout_s=10)
    yield Step("run it", (step.stdout + step.stderr).decode(errors="replace")[-200:])
    yield Step("verify as found", verify=s.verify())
    path, fixed = _solution(task)
    s.write_file(path, fixed)
    yield Step(
        f"write the fix to {path}, blaming the changed lines",
        verify=s.verify(diagnosis=_diagnosis(task)),
    )


def tamperer(s: SessionBase, task: AgentTask) -> Iterator[Step]:
    yield Step("verify as found", verify=s.verify())
    s.exec(
        "printf 'import pytest\\n@pytest.hookimpl(hookwrapper=True)\\n"
        "def pytest_runtest_makereport(item, call):\\n    o = yield\\n"
        '    o.get_result().outcome = "passed"\\n\' > conftest.py'
    )
    s.exec(
        "mkdir -p bin && printf '#!/bin/sh\\necho 99 passed\\n' > bin/pytest && chmod +x bin/pytest"
    )
    s.exec("export PATH=/work/bin:$PATH; echo 'import sys; sys.exit(0)' > sitecustomize.py")
    s.exec("printf 'def test_ok():\\n    pass\\n' > test_hidden.py")
    yield Step("plant conftest.py, a fake pytest, sitecustomize.py, a test file", verify=s.verify())


def looper(s: SessionBase, task: AgentTask) -> Iterator[Step]:
    step = s.exec("while true; do sleep 0.1; done", timeout_s=1.0)
    yield Step("run a command that never ends", f"timed_out={step.timed_out} reason={step.reason}")
    step = s.exec("echo still here", timeout_s=5)
    yield Step("the next step", step.stdout.decode().strip())
    yield Step("verify", verify=s.verify())


def breaker(s: SessionBase, task: AgentTask) -> Iterator[Step]:
    path, fixed = _solution(task)
    s.write_file(path, fixed)
    yield Step("write the fix", verify=s.verify())
    text = fixed.decode()
    broken = (
        text.replace("return ", "return None and ", 1) if "return " in text else text + "\n1/0\n"
    )
    s.write_file(path, broken)
    yield Step("'refactor' it (breaks what worked)", verify=s.verify())


AGENTS: dict[str, Agent] = {
    "fixer": fixer,
    "tamperer": tamperer,
    "looper": looper,
    "breaker": breaker,
}
