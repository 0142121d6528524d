"""``call`` tests: the submission's functions are called from the trusted side.

One sandbox run loads the submission and serves calls over a socket (fd 3); arguments go in
and results come back as plain data (``values``), and the comparison happens here, so the
expected values never enter the sandbox and no object the submission built is ever compared.
"""

from __future__ import annotations

import json
import os
import select
import socket
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..runner import Runner
from ..telemetry import tracing
from ..types import ExecResult, Limits, Network
from . import _background, _trusted, values
from ._group import TestGroup
from .types import TestCase, TestResult, Verdict

_MAX_REPLY = 64 << 20
#: After a reply that ends the calls early, how long the program may take to end on its own
#: (it has the requests sent ahead; those are cheap as a rule) before its run is killed.
_STOP_GRACE_S = 0.05


Reply = tuple[bool, Any]  # (True, plain value) or (False, error message)

#: Assertions a call test may carry in ``options["python_op"]`` (see ``_assertion``).
PYTHON_OPS = ("==", "is", "truthy", "falsy", "abs<", "abs<=")


def call_values(
    runner: Runner,
    code: bytes,
    calls: list[tuple[str, list[Any]]],
    limits: Limits,
    keep_going: Callable[[int, Reply], bool] | None = None,
    network: Network = "none",
) -> tuple[list[Reply], ExecResult]:
    """Call ``fn(*args)`` for each ``(fn, args)`` in one sandbox run of ``code``.

    Returns the replies received (fewer than asked if the program died, or if
    ``keep_going(i, reply)`` returned False for reply ``i``) and the run.

    The requests go out ahead of the replies, so calls cost no round trip each between the
    processes. With ``keep_going``, the first call goes alone (most failing programs fail
    there, and then make no other call), and the rest follow once it is answered. When
    ``keep_going`` says stop before the last reply, the channel is closed; a program still
    busy with a later call :data:`_STOP_GRACE_S` on is killed (the run's result is then
    that of a killed program), so a later call that loops costs no time limit.
    """
    requests = [
        (json.dumps({"fn": fn, "args": [values.encode(a) for a in args]}) + "\n").encode()
        for fn, args in calls
    ]
    host, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    stop_r, stop_w = os.pipe2(os.O_CLOEXEC)
    req = _trusted.call_server(runner, code, limits, inside.detach(), stop_r, network)
    run = tracing.in_thread("assay.run", lambda: runner.execute(req), {"assay.test_kind": "call"})
    worker = _background.start(run)
    replies: list[Reply] = []
    link = _Link(host, worker)
    first = 1 if keep_going is not None else len(requests)
    link.send(b"".join(requests[:first]))
    stop = False
    try:
        while len(replies) < len(calls):
            line = link.line()
            if line is None:
                break
            replies.append(_parse(line))
            if keep_going is not None and not keep_going(len(replies) - 1, replies[-1]):
                stop = len(replies) < len(calls)  # after the last reply the program just ends
                break
            if len(replies) == first:
                link.send(b"".join(requests[first:]))
    except BaseException:
        stop = True
        raise
    finally:
        host.close()
        if stop and not worker.wait(_STOP_GRACE_S):
            os.write(stop_w, b"x")
        result = _background.outcome(worker)
        os.close(stop_r)
        os.close(stop_w)
    return replies, result


def _parse(line: bytes) -> Reply:
    try:
        msg = json.loads(line)
    except ValueError:
        return False, "malformed reply"
    if not isinstance(msg, dict):
        return False, "malformed reply"
    if "error" in msg:
        return False, str(msg["error"])[:500]
    try:
        return True, values.decode(msg.get("ok"))
    except values.BadValue as exc:
        return False, f"not a plain value: {exc}"


def run_calls(group: TestGroup) -> list[TestResult]:
    """One result per test; with ``stop_on_failure``, none for the tests after the first
    failure, which are never called (as an assert-style ``check`` stops at its first failed
    assert, so a program that would loop forever on a later test is not kept running)."""
    tests, stop_on_failure = group.tests, group.stop_on_failure
    calls = [(t.options["fn_name"], list(t.options["args"])) for _, t in tests]
    results: list[TestResult] = []

    def grade(i: int, reply: Reply) -> bool:
        index, test = tests[i]
        results.append(_grade(index, test, reply))
        return not (stop_on_failure and results[-1].verdict != "accepted")

    _, result = call_values(group.runner, group.code, calls, group.limits, grade, group.network)
    if result.status == "sandbox_error":  # our fault: no test result from this run stands
        return [TestResult(i, "sandbox_error", message=_tail(result)) for i, _ in tests]
    if not (stop_on_failure and results and results[-1].verdict != "accepted"):
        failed = _verdict_of(result)
        why = _tail(result)
        if not why and failed == "runtime_error":  # ended before answering, without a word:
            why = "the submission's process is gone"  # worded as the script harness words it
        results += [TestResult(index, failed, message=why) for index, _ in tests[len(results) :]]
    return _measured(results, result)


def _measured(results: list[TestResult], run: ExecResult) -> list[TestResult]:
    """The tests of one run, with what the kernel measured of that run: its CPU and wall
    time split evenly over them (so that their sum, which the efficiency reward and the
    records use, is the run's), and its peak memory as each one's peak (the largest, which
    the memory reward uses, is the run's). Per-call figures from inside the sandbox would be
    the submission's word; the cgroup only sees the whole run."""
    n = max(1, len(results))
    cpu, wall = run.cpu_s / n, run.wall_s / n
    return [
        replace(r, cpu_s=cpu, wall_s=wall, peak_memory_bytes=run.peak_memory_bytes) for r in results
    ]


def _grade(index: int, test: TestCase, reply: Reply) -> TestResult:
    ok, got = reply
    if not ok:
        if str(got).startswith(("malformed", "not a plain value")):
            return TestResult(index, "wrong_answer", message=str(got))
        return TestResult(index, "runtime_error", message=str(got))
    want = test.expected_value
    op = test.options.get("python_op")
    if op is not None:
        # The test's own assertion, on decoded builtin values only (no object of the
        # submission can take part in it).
        same, shown = _assertion(op, got, want, test.options)
        if same:
            return TestResult(index, "accepted")
        return TestResult(index, "wrong_answer", message=f"expected {shown}, got {_show(got)}")
    atol, rtol = float(test.options.get("atol", 0.0)), float(test.options.get("rtol", 0.0))
    if test.options.get("tuples_as_lists"):
        got = values.tuples_to_lists(got)
    for candidate in (want, *test.options.get("also", [])):
        if values.equal(got, candidate, atol, rtol):
            return TestResult(index, "accepted")
    return TestResult(index, "wrong_answer", message=f"expected {_show(want)}, got {_show(got)}")


def _show(value: Any) -> str:
    """At most 200 characters of ``repr(value)``. Never raises: Python refuses to write an
    int of more than 4300 digits in decimal, and a submission may return one (or a test
    expect one), which must make a wrong answer, not a crash of the judge."""
    try:
        return f"{value!r:.200}"
    except ValueError:
        if isinstance(value, int):
            return f"an int of {value.bit_length()} bits"
        return f"a {type(value).__name__} holding an int too long to write"


def _assertion(op: str, got: Any, want: Any, options: dict[str, Any]) -> tuple[bool, str]:
    """Whether ``assert <op>(got, want)`` holds, as Python would evaluate it on builtins,
    and what was expected, for the message. An opaque object (not a plain value) never
    satisfies an assertion: its truth value and arithmetic would be the submission's."""
    if isinstance(got, values.Opaque):
        return False, f"{_show(want)} (a plain value)"
    try:
        # An iterator stays one (``gen == []`` is False). Inside the try: a program can
        # claim any type name, and rebuilding e.g. dict_keys of lists raises TypeError.
        got = values.as_python(got)
        if options.get("convert") == "tuple":  # ``tuple(candidate(...)) == ...``
            got = tuple(got)
        if op == "is":
            return got is want, f"{_show(want)}"
        if op == "==":
            return _py_equal(got, want), f"{_show(want)}"
        if op in ("truthy", "falsy"):
            return bool(got) is (
                op == "truthy"
            ), "a true value" if op == "truthy" else "a false value"
        if op in ("abs<", "abs<="):
            tol = options["tol"]
            diff = abs(got - want)
            ok = diff < tol if op == "abs<" else diff <= tol
            return bool(ok), f"within {tol!r} of {_show(want)}"
    except (TypeError, ValueError, OverflowError, ArithmeticError):
        return False, f"{_show(want)} (the assertion raised on this answer)"
    raise ValueError(f"unknown python_op {op!r}")


def _py_equal(got: Any, want: Any) -> bool:
    try:
        return bool(got == want)
    except Exception:  # e.g. comparing huge structures; builtins only, but be safe
        return False


def _verdict_of(result: ExecResult) -> Verdict:
    if result.status in ("time_limit", "memory_limit", "output_limit", "sandbox_error"):
        return result.status
    return "runtime_error"


def _tail(result: ExecResult) -> str:
    # Worded as the script harness words it, so a format's test kind never shows.
    return result.stderr.decode(errors="replace")[-500:] or "the submission's process is gone"


class _Link:
    """The trusted end of the call channel: sends requests as the server takes them and
    returns its reply lines; None once the sandbox is gone (or sent too much)."""

    def __init__(self, sock: socket.socket, worker: _background.Task[ExecResult]) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.worker = worker
        self.out = memoryview(b"")
        self.buf = b""

    def send(self, data: bytes) -> None:
        """Send what the socket takes now; the rest goes out while :meth:`line` waits."""
        self.out = memoryview(bytes(self.out) + data) if self.out else memoryview(data)
        self._push()

    def _push(self) -> None:
        try:
            self.out = self.out[self.sock.send(self.out) :]
        except BlockingIOError:
            pass
        except OSError:  # the server is gone: only its replies so far count
            self.out = memoryview(b"")

    def line(self) -> bytes | None:
        while b"\n" not in self.buf:
            if len(self.buf) > _MAX_REPLY:
                return None
            # poll, not select: a busy process's descriptors pass 1024, which select refuses.
            poller = select.poll()
            poller.register(self.sock, select.POLLIN | (select.POLLOUT if self.out else 0))
            events = poller.poll(50)
            mask = events[0][1] if events else 0
            readable = bool(mask & (select.POLLIN | select.POLLHUP | select.POLLERR))
            writable = bool(mask & select.POLLOUT)
            if writable:
                self._push()
            if readable:
                try:
                    chunk = self.sock.recv(1 << 16)
                except BlockingIOError:
                    continue
                except OSError:  # the server died with our request unread
                    return None
                if not chunk:
                    return None
                self.buf += chunk
            elif not writable and self.worker.done():
                return None
        line, self.buf = self.buf.split(b"\n", 1)
        return line
