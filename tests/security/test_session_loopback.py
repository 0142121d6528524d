"""Claim: a session's loopback (``lo`` up in its own network namespace) reaches the
session's own servers only: not a server on the host's loopback, and not another session's
server on the same port, over TCP or UDP, IPv4 or IPv6.

Each attack runs for real from a session step; a host listener that sees a connection or a
datagram fails the test, as does any attempt that succeeds inside.
"""

from __future__ import annotations

import json
import select
import socket

from assay.sessions import Session, SessionLimits

LIMITS = SessionLimits(cpu_s=60, memory_mb=256, processes=32, disk_mb=16)

PROBE = r"""
import json, socket, subprocess, sys
port, port6, udp = (int(x) for x in sys.argv[1:4])
out = {}
def attempt(name, fn):
    try:
        out[name] = ["reached", repr(fn())]
    except OSError as exc:
        out[name] = ["failed", exc.errno]
def tcp(family, host, p):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect((host, p))
    s.sendall(b"escaped")
    return s.getpeername()
def udp_send():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"escaped", ("127.0.0.1", udp))
    s.settimeout(1)
    return s.recv(16)  # a host answer would arrive here
def dev_tcp():
    p = subprocess.run(["/bin/bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo IN"],
                       capture_output=True, timeout=5)
    if b"IN" in p.stdout:
        return "connected"
    raise OSError(p.returncode, "refused")
attempt("tcp4", lambda: tcp(socket.AF_INET, "127.0.0.1", port))
attempt("tcp6", lambda: tcp(socket.AF_INET6, "::1", port6))
attempt("mapped", lambda: tcp(socket.AF_INET6, "::ffff:127.0.0.1", port))
attempt("udp", udp_send)
attempt("dev_tcp", dev_tcp)
print(json.dumps(out))
"""


def _listen(family: int, kind: int, host: str) -> socket.socket | None:
    try:
        sock = socket.socket(family, kind)
        sock.bind((host, 0))
    except OSError:  # no IPv6 on this host
        return None
    if kind == socket.SOCK_STREAM:
        sock.listen(16)
    sock.setblocking(False)
    return sock


def test_session_cannot_reach_host_loopback(runner) -> None:  # type: ignore[no-untyped-def]
    tcp4 = _listen(socket.AF_INET, socket.SOCK_STREAM, "127.0.0.1")
    tcp6 = _listen(socket.AF_INET6, socket.SOCK_STREAM, "::1")
    udp = _listen(socket.AF_INET, socket.SOCK_DGRAM, "127.0.0.1")
    assert tcp4 is not None and udp is not None
    port = tcp4.getsockname()[1]
    port6 = tcp6.getsockname()[1] if tcp6 is not None else port
    try:
        with Session(runner, {"probe.py": PROBE}, limits=LIMITS) as s:
            step = s.exec(f"python3 probe.py {port} {port6} {udp.getsockname()[1]}")
            assert step.exit_code == 0, step.stderr
            outcomes = json.loads(step.stdout)
        assert set(outcomes) == {"tcp4", "tcp6", "mapped", "udp", "dev_tcp"}
        for name, outcome in outcomes.items():
            assert outcome[0] == "failed", f"{name} reached the host: {outcome}"
        # Nothing arrived: no pending connection on a listener, no datagram on the socket.
        listening = [sock for sock in (tcp4, tcp6, udp) if sock is not None]
        arrived, _, _ = select.select(listening, [], [], 0)
        assert arrived == [], f"host sockets reached from a session: {arrived}"
    finally:
        for sock in (tcp4, tcp6, udp):
            if sock is not None:
                sock.close()


SERVE = (
    'python3 -c \'import socket\ns=socket.socket(); s.bind(("127.0.0.1", 8765)); s.listen()\n'
    'while True:\n    c, _ = s.accept(); c.sendall(b"mine"); c.close()\' >/dev/null 2>&1 &'
)
FETCH = (
    "python3 -c 'import socket, time\nfor _ in range(50):\n    try:\n"
    '        print(socket.create_connection(("127.0.0.1", 8765), 2).recv(4).decode()); break\n'
    '    except OSError as e:\n        err = e; time.sleep(0.1)\nelse:\n    print("failed", err.errno)\''
)


def test_session_cannot_reach_another_sessions_server(runner) -> None:  # type: ignore[no-untyped-def]
    with (
        Session(runner, limits=LIMITS) as owner,
        Session(runner, limits=LIMITS) as other,
    ):
        assert owner.exec(SERVE).exit_code == 0
        assert owner.exec(FETCH, timeout_s=10).stdout == b"mine\n"  # it is up, inside
        probe = other.exec(FETCH.replace("range(50)", "range(3)"), timeout_s=10)
        assert probe.stdout.startswith(b"failed"), probe.stdout
