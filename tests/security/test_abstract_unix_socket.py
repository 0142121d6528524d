"""Claim: abstract-namespace unix sockets do not cross the sandbox boundary, neither between
two sandboxes running at the same time nor between a sandbox and the host.

Abstract unix addresses belong to the network namespace, and AF_UNIX is the one socket
family the seccomp filter allows, so this boundary rests on the per-sandbox network
namespace alone. Sandbox A binds and listens on an abstract name; sandbox B, started while
A is listening (checked with wall-clock timestamps, which are not namespaced), tries to
connect to it, and then binds the same name itself, which only works if it is a different
namespace. A host process listening on an abstract name must be unreachable likewise.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time

LISTENER = r"""
import json, socket, sys, time

name = sys.stdin.read().encode()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(b"\0" + name)
s.listen(8)
s.settimeout(0.1)
start = time.time()
accepted = []
while time.time() - start < 2.5:
    try:
        conn, _ = s.accept()
    except (TimeoutError, socket.timeout):
        continue
    accepted.append(conn.recv(64).decode(errors="replace"))
    conn.close()
print(json.dumps({"listen_start": start, "listen_end": time.time(), "accepted": accepted}))
"""

CONNECTOR = r"""
import json, socket, sys, time

name = sys.stdin.read().encode()
attempts = []
start = time.time()
while time.time() - start < 0.6:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        c.connect(b"\0" + name)
        c.sendall(b"escaped")
        attempts.append(["connected", time.time()])
    except OSError as exc:
        attempts.append(["failed", time.time(), exc.errno])
    finally:
        c.close()
    time.sleep(0.05)
for kind in (socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
    c = socket.socket(socket.AF_UNIX, kind)
    try:
        c.connect(b"\0" + name)
        attempts.append(["connected", time.time(), kind])
    except OSError as exc:
        attempts.append(["failed", time.time(), exc.errno])
    finally:
        c.close()
own = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    own.bind(b"\0" + name)
    bound = True
except OSError as exc:
    bound = exc.errno
print(json.dumps({"attempts": attempts, "own_bind": bound}))
"""


def _assert_never_connected(report: dict) -> None:
    assert report["attempts"], "the connector made no attempt"
    for attempt in report["attempts"]:
        assert attempt[0] == "failed", f"connected across the boundary: {attempt}"


def test_two_concurrent_sandboxes_cannot_meet_on_an_abstract_socket(run_py) -> None:
    name = f"assay-test-{os.getpid()}-{time.monotonic_ns()}"
    results: dict[str, object] = {}

    def listen() -> None:
        results["a"] = run_py(LISTENER, stdin=name, time_s=2, wall_s=10)

    thread = threading.Thread(target=listen)
    thread.start()
    try:
        time.sleep(0.5)  # let A bind first; overlap is verified below, not assumed
        b = run_py(CONNECTOR, stdin=name, time_s=2, wall_s=10)
    finally:
        thread.join(30)
    a = results["a"]
    assert a.status == "ok", (a.status, a.stderr_text)  # type: ignore[attr-defined]
    assert b.status == "ok", (b.status, b.stderr_text)
    listener = json.loads(a.stdout)  # type: ignore[attr-defined]
    connector = json.loads(b.stdout)

    _assert_never_connected(connector)
    assert listener["accepted"] == [], f"sandbox A accepted: {listener['accepted']}"
    overlapping = [
        t
        for _, t, *_ in connector["attempts"]
        if listener["listen_start"] < t < listener["listen_end"]
    ]
    assert overlapping, (
        "the two sandboxes did not run at the same time; the test proved nothing",
        listener,
        connector,
    )
    assert connector["own_bind"] is True, (
        "B could not bind the name A holds: the two sandboxes share an abstract namespace",
        connector["own_bind"],
    )


def test_sandbox_cannot_reach_a_host_abstract_socket(run_py) -> None:
    name = f"assay-host-{os.getpid()}-{time.monotonic_ns()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(b"\0" + name.encode())
    server.listen(8)
    server.setblocking(False)
    try:
        result = run_py(CONNECTOR, stdin=name, time_s=2, wall_s=10)
        assert result.status == "ok", (result.status, result.stderr_text)
        report = json.loads(result.stdout)
        _assert_never_connected(report)
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            pass
        else:
            conn.close()
            raise AssertionError("the host's abstract socket accepted a sandbox connection")
        assert report["own_bind"] is True, report
    finally:
        server.close()
