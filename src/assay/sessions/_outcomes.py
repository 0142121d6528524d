"""From a verification run's per-node outcomes to the task's tests, as SWE-bench counts them.

Test ids: a task's ids are pytest node ids as SWE-bench stores them. Its harness reads the
``pytest -rA`` summary and keeps, of each ``STATUS nodeid`` line, the node id up to its
first whitespace: a parametrised id with a space (``test_x[a b]``) is stored as
``test_x[a``, and one with a newline is cut there. An id here matches a node whose id is
exactly it, or whose id cut at its first whitespace is it; several nodes under one cut id
count as one test that fails if any of them fails (the summary lists failures after
passes, and the harness keeps the last line).

Outcomes: ``passed`` and ``xfailed`` pass (SWE-bench's PASSED and XFAIL); ``failed``
fails; a test no node reported fails. A test ``skipped`` now passes only if it was skipped
on the task's own workspace too (the environment skips it: SWE-bench counts it as neither
passed nor failed); skipped only now, the code under test skipped it, which counts as a
failure.

Environment failures: what is wrong on the task's own workspace, before the agent did
anything, is the task's fault (:func:`environment_failure`), never a failed verdict.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .._pysource import missing_modules
from ..tasks.types import AgentTask
from ._layout import own_modules
from ._verify_run import TestRun

_CUT = re.compile(r"\S+")
#: pytest's exit codes for "could not run at all": internal error, usage error.
_PYTEST_CANNOT_RUN = {3: "internal error", 4: "usage error"}


def swe_key(nodeid: str) -> str:
    """A node id as SWE-bench's log parser stores it: cut at the first whitespace."""
    m = _CUT.match(nodeid)
    return m.group(0) if m else nodeid


def statuses(ids: Iterable[str], run: TestRun) -> dict[str, str]:
    """Each id's status in ``run``: ``passed``, ``failed``, ``skipped`` or ``missing``."""
    by_key: dict[str, list[str]] = {}
    for nodeid, (outcome, _msg) in run.outcomes.items():
        by_key.setdefault(nodeid, []).append(outcome)
        key = swe_key(nodeid)
        if key != nodeid:
            by_key.setdefault(key, []).append(outcome)
    out = {}
    for test in ids:
        seen = by_key.get(test, [])
        if not seen:
            out[test] = "missing"
        elif "failed" in seen:
            out[test] = "failed"
        elif all(o == "skipped" for o in seen):
            out[test] = "skipped"
        else:
            out[test] = "passed"
    return out


def message_of(test: str, run: TestRun) -> str:
    """What the run said about ``test`` (its failure), or why nothing was said."""
    for nodeid, (outcome, msg) in run.outcomes.items():
        if (nodeid == test or swe_key(nodeid) == test) and outcome != "passed":
            if nodeid == "test_command":  # the runner's own account comes first
                return " ".join(msg.split())[:300]
            return msg.strip().splitlines()[-1][:200] if msg.strip() else outcome
    path = test.partition("::")[0]
    for nodeid, msg in run.collect_errors.items():
        if nodeid == path or nodeid.startswith(path + "::"):
            return "collection error: " + (msg.strip().splitlines() or [""])[-1][:200]
    return "not run (no such test was collected)"


def _missing_dependency(message: str, own: set[str]) -> str | None:
    for name in missing_modules(message):
        if name.partition(".")[0] not in own:
            return name
    return None


def environment_failure(task: AgentTask, run: TestRun) -> str | None:
    """Why the task's own workspace cannot be judged (``None`` when it can): the test run
    did not complete, pytest could not start, a test file the task does not change fails
    to collect, or a test imports a module nothing provides (a missing dependency)."""
    if run.sandbox_error is not None:
        return f"the run on the task's own workspace failed: {run.sandbox_error}"
    res = run.result
    if not run.complete:
        status = res.status if res else "no result"
        return f"the test run on the task's own workspace did not complete ({status}): " + (
            run.tail() or "no output"
        )
    if run.exit_code in _PYTEST_CANNOT_RUN and not task.test_command:
        errors = "; ".join(m[-300:] for m in run.collect_errors.values())
        return (
            f"pytest cannot start on the task's own workspace "
            f"({_PYTEST_CANNOT_RUN[run.exit_code]}): {errors or run.tail() or 'no output'}"
        )
    own = own_modules(task.files)
    for nodeid, msg in sorted(run.collect_errors.items()):
        path = nodeid.partition("::")[0]
        missing = _missing_dependency(msg, own)
        if missing is not None:
            return f"{path} imports {missing!r}, which is not installed: {msg[-300:]}"
        if path not in task.tests:
            return f"{path}, which the task does not change, fails to collect: {msg[-300:]}"
    for nodeid, (outcome, msg) in sorted(run.outcomes.items()):
        missing = _missing_dependency(msg, own) if outcome == "failed" else None
        if missing is not None:
            return f"{nodeid} fails importing {missing!r}, which is not installed"
    return None


def failure_reason(
    status: Mapping[str, str], run: TestRun, edits: list[str], counted: set[str]
) -> str:
    """Why a verification is not accepted, in a line: protected edits, then the tests."""
    parts = []
    if edits:
        parts.append("protected paths changed: " + ", ".join(edits[:5]))
    if run.exit_code in _PYTEST_CANNOT_RUN:
        parts.append(f"pytest could not run ({_PYTEST_CANNOT_RUN[run.exit_code]})")
    bad = [t for t in status if t not in counted]
    if bad:
        shown = "; ".join(f"{t}: {message_of(t, run)}" for t in bad[:3])
        parts.append(f"{len(bad)} of {len(status)} tests do not pass ({shown})")
    return ". ".join(parts)


__all__ = ["environment_failure", "failure_reason", "message_of", "statuses", "swe_key"]
