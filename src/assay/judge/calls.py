"""``call`` tests: the submission's functions are called from the trusted side.

One sandbox run loads the submission and serves calls over a socket (fd 3); arguments go in
and results come back as plain data (``values``), and the comparison happens here, so the
expected values never enter the sandbox and no object the submission built is ever compared.
"""

from __future__ import annotations

import collections
import json
import math
import os
import select
import socket
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..runner import Runner
from ..telemetry import tracing
from ..types import ExecResult, Limits, Network
from . import _background, _trusted, values
from ._group import TestGroup
from .types import TestCase, TestResult, Verdict

_MAX_REPLY = 64 << 20
#: The most taken from the channel per read.
_CHUNK = 1 << 18
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

    The channel is served by the thread that supervises the run (the default tier: one
    thread per sample, no hand-offs between two), else by this one while the run goes on
    in the background.
    """
    return _serve(
        runner, code, [_line(fn, args) for fn, args in calls], limits, keep_going, network
    )


def _line(fn: str, args: list[Any]) -> bytes:
    """The request line of ``fn(*args)``."""
    return (json.dumps({"fn": fn, "args": [values.encode(a) for a in args]}) + "\n").encode()


class _Lines:
    """Each call test's request line, encoded once per test object: a problem's tests are
    judged for every sample (a HumanEval task's 7 cost ~56 us per sample to encode, and
    HumanEval+'s hundreds per task cost milliseconds). Keyed by the object's id and checked
    by identity through a weak reference (a ``TestCase`` is frozen and unhashable), so a
    test that is gone (a service's per-request problem) takes its line with it; the least
    recently used are dropped past :data:`MAX_BYTES`."""

    MAX_BYTES = 64 << 20

    def __init__(self) -> None:
        self._lines: collections.OrderedDict[int, tuple[weakref.ref[TestCase], bytes]] = (
            collections.OrderedDict()
        )
        self._bytes = 0
        self._lock = threading.Lock()
        #: Ids of tests that died (appended by their weak references' callbacks, which may
        #: run in any thread at any allocation: nothing there but an atomic append).
        self._dead: collections.deque[int] = collections.deque()

    def of(self, tests: list[TestCase]) -> list[bytes]:
        with self._lock:
            self._purge()
            found = [self._get(t) for t in tests]
        missing = {
            id(t): (t, _line(t.options["fn_name"], list(t.options["args"])))
            for t, line in zip(tests, found, strict=True)
            if line is None
        }
        if missing:
            dead = self._dead
            with self._lock:
                for key, (test, line) in missing.items():
                    self._drop(key)
                    ref = weakref.ref(test, _on_death(dead, key))
                    self._lines[key] = (ref, line)
                    self._bytes += len(line)
                while self._bytes > self.MAX_BYTES and self._lines:
                    self._bytes -= len(self._lines.popitem(last=False)[1][1])
        return [
            line if line is not None else missing[id(t)][1]
            for t, line in zip(tests, found, strict=True)
        ]

    def _get(self, test: TestCase) -> bytes | None:
        entry = self._lines.get(id(test))
        if entry is None or entry[0]() is not test:
            return None
        self._lines.move_to_end(id(test))
        return entry[1]

    def _drop(self, key: int) -> None:
        entry = self._lines.pop(key, None)
        if entry is not None:
            self._bytes -= len(entry[1])

    def _purge(self) -> None:
        """Drop the lines of tests that died (unless their id serves a new test now)."""
        while self._dead:
            key = self._dead.popleft()
            entry = self._lines.get(key)
            if entry is not None and entry[0]() is None:
                self._drop(key)


def _on_death(dead: collections.deque[int], key: int) -> Callable[[Any], None]:
    """A weak reference's callback that says its test (id ``key``) died."""
    return lambda _ref: dead.append(key)


_LINES = _Lines()


def _serve(
    runner: Runner,
    code: bytes,
    requests: list[bytes],
    limits: Limits,
    keep_going: Callable[[int, Reply], bool] | None,
    network: Network,
) -> tuple[list[Reply], ExecResult]:
    """``call_values`` with its requests encoded."""
    host, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    first = 1 if keep_going is not None else len(requests)
    channel = _Channel(host, requests, first, keep_going)
    try:
        if runner.serves_companions:
            req = _trusted.call_server(
                runner, code, limits, inside.detach(), network=network, companion=channel
            )
            with tracing.span("assay.run", {"assay.test_kind": "call"}):
                try:
                    result = runner.execute(req)
                except Exception as exc:  # our fault, as from a background run
                    result = _background.failed(exc)
        else:
            result = _served_here(runner, code, limits, inside, channel, network)
    finally:
        channel.close()
    if channel.error is not None:
        raise channel.error
    return channel.replies, result


def _served_here(
    runner: Runner,
    code: bytes,
    limits: Limits,
    inside: socket.socket,
    channel: _Channel,
    network: Network,
) -> ExecResult:
    """The run on a background thread, its channel served on this one until it is done,
    the run has ended, or this thread is interrupted (the run is then stopped)."""
    stop_r, stop_w = os.pipe2(os.O_CLOEXEC)
    req = _trusted.call_server(runner, code, limits, inside.detach(), stop_r, network)
    run = tracing.in_thread("assay.run", lambda: runner.execute(req), {"assay.test_kind": "call"})
    worker = _background.start(run)
    try:
        # poll, not select: a busy process's descriptors pass 1024, which select refuses.
        poller = select.poll()
        while channel.events():
            poller.register(channel.fileno(), channel.events())
            events = poller.poll(50)
            poller.unregister(channel.fileno())
            if events:
                channel.ready(events[0][1])
            elif worker.done():
                channel.finish()
    except BaseException:
        channel.stop_at = time.monotonic()
        raise
    finally:
        channel.close()
        if channel.stop_at < math.inf and not worker.wait(
            max(0.0, channel.stop_at - time.monotonic())
        ):
            os.write(stop_w, b"x")
        result = _background.outcome(worker)
        os.close(stop_r)
        os.close(stop_w)
    return result


def _parse(line: bytes | bytearray) -> Reply:
    try:
        msg = json.loads(line.decode())  # UTF-8 only (UnicodeDecodeError is a ValueError)
    except (ValueError, RecursionError):  # arrays nested past the parser's depth: the
        return False, "malformed reply"  # program's doing, not an internal error
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
    requests = _LINES.of([t for _, t in tests])
    graded: list[Graded] = []

    def grade(i: int, reply: Reply) -> bool:
        graded.append(_grade(tests[i][1], reply))
        return not (stop_on_failure and graded[-1][0] != "accepted")

    _, result = _serve(group.runner, group.code, requests, group.limits, grade, group.network)
    if result.status == "sandbox_error":  # our fault: no test result from this run stands
        return [TestResult(i, "sandbox_error", message=_tail(result)) for i, _ in tests]
    if not (stop_on_failure and graded and graded[-1][0] != "accepted"):
        failed = _verdict_of(result)
        why = _tail(result)
        if not why and failed == "runtime_error":  # ended before answering, without a word:
            why = "the submission's process is gone"  # worded as the script harness words it
        graded += [(failed, why)] * (len(tests) - len(graded))
    return _measured([i for i, _ in tests[: len(graded)]], graded, result)


#: A call test's verdict and message, before its run is measured.
Graded = tuple[Verdict, str]


def _measured(indices: list[int], graded: list[Graded], run: ExecResult) -> list[TestResult]:
    """The tests of one run, with what the kernel measured of that run: its CPU and wall
    time split evenly over them (so that their sum, which the efficiency reward and the
    records use, is the run's), and its peak memory as each one's peak (the largest, which
    the memory reward uses, is the run's). Per-call figures from inside the sandbox would be
    the submission's word; the cgroup only sees the whole run. (Each result is built once,
    here: HumanEval+ has ~700 tests per task.)"""
    n = max(1, len(graded))
    cpu, wall, peak = run.cpu_s / n, run.wall_s / n, run.peak_memory_bytes
    return [
        TestResult(index, verdict, cpu, wall, peak, message)
        for index, (verdict, message) in zip(indices, graded, strict=True)
    ]


def _grade(test: TestCase, reply: Reply) -> Graded:
    ok, got = reply
    if not ok:
        if str(got).startswith(("malformed", "not a plain value")):
            return "wrong_answer", str(got)
        return "runtime_error", str(got)
    want = test.expected_value
    op = test.options.get("python_op")
    if op is not None:
        # The test's own assertion, on decoded builtin values only (no object of the
        # submission can take part in it).
        same, shown = _assertion(op, got, want, test.options)
        if same:
            return "accepted", ""
        return "wrong_answer", f"expected {shown}, got {_show(got)}"
    atol, rtol = float(test.options.get("atol", 0.0)), float(test.options.get("rtol", 0.0))
    if test.options.get("tuples_as_lists"):
        got = values.tuples_to_lists(got)
    for candidate in (want, *test.options.get("also", [])):
        if values.equal(got, candidate, atol, rtol):
            return "accepted", ""
    return "wrong_answer", f"expected {_show(want)}, got {_show(got)}"


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


class _Channel:
    """The trusted end of the call channel (a :class:`~assay.sandbox.Companion`), driven by
    poll events: requests go out as the server takes them, replies are parsed as they come
    and shown to ``keep_going``. It is done once every reply is in, the server is gone or
    sent a line of over :data:`_MAX_REPLY` bytes, or ``keep_going`` said stop before the
    last reply: then the run is stopped if it still goes :data:`_STOP_GRACE_S` later.
    An exception from ``keep_going`` ends it the same way and is kept in ``error``."""

    def __init__(
        self,
        sock: socket.socket,
        requests: list[bytes],
        first: int,
        keep_going: Callable[[int, Reply], bool] | None,
    ) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.requests = requests
        self.first = first
        self.keep_going = keep_going
        self.replies: list[Reply] = []
        self.error: BaseException | None = None
        self.stop_at = math.inf
        self.out = memoryview(b"".join(requests[:first]))
        # Appended to and cut from the front in place, and searched for a line's end only in
        # what arrived since: a reply of many chunks costs time linear in its size (joining
        # bytes and searching all of them again per chunk made a 60 MiB reply ~14 s of CPU).
        self.buf = bytearray()
        self._push()

    def fileno(self) -> int:
        return self.sock.fileno()  # -1 once closed

    def events(self) -> int:
        if self.sock.fileno() < 0:
            return 0
        return select.POLLIN | (select.POLLOUT if self.out else 0)

    def ready(self, mask: int) -> None:
        try:
            if mask & select.POLLOUT:
                self._push()
            if mask & (select.POLLIN | select.POLLHUP | select.POLLERR):
                self._read()
        except BaseException as exc:  # from keep_going: the caller raises it after the run
            self.error = exc
            self._stop()

    def finish(self) -> None:
        """The run is over: take the replies it left, without waiting, and close."""
        try:
            while self.sock.fileno() >= 0 and self._read():
                pass
        except BaseException as exc:
            self.error = exc
        self.close()

    def close(self) -> None:
        self.sock.close()

    def _stop(self) -> None:
        if self.sock.fileno() >= 0:
            self.close()
            self.stop_at = time.monotonic() + _STOP_GRACE_S

    def _push(self) -> None:
        try:
            self.out = self.out[self.sock.send(self.out) :]
        except BlockingIOError:
            pass
        except OSError:  # the server is gone: only its replies so far count
            self.out = memoryview(b"")

    def _read(self) -> bool:
        """Take what the socket holds now; False when there was nothing (or it is done)."""
        try:
            chunk = self.sock.recv(_CHUNK)
        except BlockingIOError:
            return False
        except OSError:  # the server died with our request unread
            self.close()
            return False
        if not chunk:
            self.close()
            return False
        # What was here before holds no line's end (each is taken as it arrives).
        end = chunk.find(b"\n")
        if end >= 0:
            end += len(self.buf)
        self.buf += chunk
        while end >= 0 and self.sock.fileno() >= 0:
            line = self.buf[:end]
            del self.buf[: end + 1]
            end = self.buf.find(b"\n")
            self.replies.append(_parse(line))
            n = len(self.replies)
            if self.keep_going is not None and not self.keep_going(n - 1, self.replies[-1]):
                if n < len(self.requests):
                    self._stop()
                else:  # after the last reply the program just ends
                    self.close()
            elif n == len(self.requests):
                self.close()
            elif n == self.first:
                self.out = memoryview(bytes(self.out) + b"".join(self.requests[self.first :]))
                self._push()
        if len(self.buf) > _MAX_REPLY:
            self.close()
        return True
