"""``script`` tests (assert-style test programs: HumanEval ``check``, MBPP asserts).

Two sandboxes per submission, joined by a socket: one runs the submission and answers calls
(``_inside/callserver.py``); the other runs the trusted test code, in which every name the
submission defines is a proxy forwarding calls to the first (``_inside/harness.py``). The
submission never shares a process with an assertion, so exiting early, patching builtins or
the test runner, or lying ``__eq__`` methods cannot make a test pass. The harness reports one
line per test on a pipe only it holds; a test without a "passed" line did not pass.
"""

from __future__ import annotations

import ast
import json
import os
import socket
import warnings

from .._pysource import parse_quietly
from ..runner import RunRequest
from ..telemetry import tracing
from ..types import ExecResult, Limits
from . import _background, _trusted
from ._group import TestGroup
from .types import TestCase, TestResult, Verdict

_LIMIT_VERDICTS = ("time_limit", "memory_limit", "output_limit")


def defined_names(code: bytes) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """What the tests may use from the submission: top-level functions and classes (called
    through proxies), the modules it imports (imported afresh on the test side), and its
    other top-level names (fetched as values or opaque handles)."""
    try:
        tree = parse_quietly(code)  # the submission's warnings are not the host's
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return [], [], []
    names: list[str] = []
    imports: list[tuple[str, str]] = []
    variables: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Import):
            imports += [
                (a.asname or a.name.split(".")[0], (a.asname and a.name) or a.name.split(".")[0])
                for a in node.names
            ]
        elif isinstance(node, ast.Assign):
            variables += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return names, imports, variables


def run_scripts(group: TestGroup) -> list[TestResult]:
    """One result per test; with ``stop_on_failure`` the harness stops at the first test
    that does not pass, and the tests after it have no result."""
    runner, code, tests, limits = group.runner, group.code, group.tests, group.limits
    stop_on_failure = group.stop_on_failure
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "solution.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        # It would not run at all (the test side would only meet the prompt's stubs); worded
        # as the call server words it, so the format never shows.
        return [
            TestResult(i, "runtime_error", message=f"{type(exc).__name__}: {exc}") for i, _ in tests
        ]
    names, imports, variables = defined_names(code)
    for _, case in tests:  # the function the task asks for is the submission's, even if missing
        names += [n for n in case.options.get("requires", []) if n not in names]
    spec = {
        "names": names,
        "imports": imports,
        "variables": [v for v in variables if v not in names],
        "stop_on_failure": stop_on_failure,
        "tests": [
            {
                "setup": t.options.get("setup", ""),
                "code": t.code,
                "call": t.options.get("call", ""),
                "pytest": t.kind == "pytest",
            }
            for _, t in tests
        ],
    }
    sub_end, test_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    report_r, report_w = os.pipe()
    server = _trusted.call_server(runner, code, limits, sub_end.detach(), network=group.network)
    harness_limits = Limits(
        time_s=max(5.0, 2 * limits.time_s),
        wall_s=limits.effective_wall_s + 10,
        memory_mb=max(512, limits.memory_mb),
    )
    harness_main, harness_file = _trusted.script(runner, _trusted.HARNESS, "_assay_harness")
    harness = RunRequest(
        "python",
        [harness_main, "/work/_assay_spec.json"],
        [
            *harness_file,
            ("_assay_spec.json", json.dumps(spec).encode(), 0o444),
        ],
        limits=harness_limits,
        pass_fds=(test_end.detach(), report_w),
        network=group.network,
    )
    script, judge = {"assay.test_kind": "script"}, {"assay.test_kind": "harness"}
    runs = [
        _background.start(tracing.in_thread("assay.run", lambda: runner.execute(server), script)),
        _background.start(tracing.in_thread("assay.run", lambda: runner.execute(harness), judge)),
    ]
    with os.fdopen(report_r, "rb") as fh:
        lines = fh.read(1 << 20).splitlines()
    sub, test = (_background.outcome(r) for r in runs)  # each waits for its run
    return _grade(tests, lines, sub, test, stop_on_failure)


def _grade(
    tests: list[tuple[int, TestCase]],
    lines: list[bytes],
    sub: ExecResult,
    test: ExecResult,
    stop_on_failure: bool = False,
) -> list[TestResult]:
    if "sandbox_error" in (sub.status, test.status):
        why = (sub if sub.status == "sandbox_error" else test).stderr.decode(errors="replace")[
            -500:
        ]
        return [TestResult(i, "sandbox_error", message=why) for i, _ in tests]
    reports: dict[int, dict[str, object]] = {}
    ended = False
    for line in lines:
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
            continue
        if isinstance(msg, dict) and msg.get("end"):
            ended = True
        elif isinstance(msg, dict) and isinstance(msg.get("index"), int):
            reports[int(msg["index"])] = msg
    gone = _as_verdict(sub.status)
    gone_why = sub.stderr.decode(errors="replace")[-500:]

    def res(index: int, verdict: Verdict, message: str) -> TestResult:
        return TestResult(index, verdict, sub.cpu_s, sub.wall_s, sub.peak_memory_bytes, message)

    results: list[TestResult] = []
    for k, (index, _t) in enumerate(tests):
        rep = reports.get(k)
        if rep is None and stop_on_failure and ended and results:
            if results[-1].verdict != "accepted":
                break  # the harness stopped after that failure, as asked
        if rep is None:
            if any(r.get("outcome") == "gone" for r in reports.values()):
                results.append(res(index, gone, gone_why))
            elif test.status in _LIMIT_VERDICTS:
                # The harness ran out while handling the submission's answers.
                results.append(
                    res(index, _as_verdict(test.status), "test side exceeded its limits")
                )
            else:
                why = "test harness died" if not ended else "no report for this test"
                results.append(
                    res(
                        index,
                        "sandbox_error",
                        f"{why}: {test.stderr.decode(errors='replace')[-400:]}",
                    )
                )
            continue
        outcome = rep.get("outcome")
        message = str(rep.get("message", ""))
        if outcome == "passed":
            results.append(res(index, "accepted", ""))
        elif outcome == "raised":
            results.append(res(index, "runtime_error", message))
        elif outcome == "gone":
            results.append(res(index, gone, gone_why or message))
        else:
            results.append(res(index, "wrong_answer", message))
    return results


def _as_verdict(status: str) -> Verdict:
    """A run's status as the verdict of the tests it could not finish."""
    if status == "time_limit":
        return "time_limit"
    if status == "memory_limit":
        return "memory_limit"
    if status == "output_limit":
        return "output_limit"
    return "runtime_error"
