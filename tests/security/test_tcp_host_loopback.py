"""Claim: a sandboxed program cannot open a TCP connection to a service listening on the
host's loopback interface (127.0.0.1 or ::1).

The test runs real TCP servers on random host loopback ports (127.0.0.1, and ::1 when the
host has IPv6), hands the ports to the program, and the program tries every way it has to
reach them: the socket module (IPv4, IPv6, IPv4-mapped IPv6), the raw socket syscall
through libc, and the ``bash`` ``/dev/tcp`` redirection. Every attempt must fail inside,
and no server may ever see a connection.
"""

from __future__ import annotations

import json
import socket

import pytest

from assay import Judge, Limits, Problem, Runner, Submission, TestCase

PROGRAM = r"""
import ctypes, json, os, socket, subprocess, sys

port, port6 = (int(x) for x in sys.stdin.read().split())
out = {}

def attempt(name, fn):
    try:
        out[name] = ["connected", repr(fn())]
    except OSError as exc:
        out[name] = ["failed", exc.errno, str(exc)]

def inet():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(("127.0.0.1", port))
    s.sendall(b"escaped")
    return s.getpeername()

def mapped_v6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(("::ffff:127.0.0.1", port))
    return s.getpeername()

def inet6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(("::1", port6))
    return s.getpeername()

def create_connection():
    return socket.create_connection(("localhost", port), timeout=2).getpeername()

def raw_syscall():
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    addr = (ctypes.c_ubyte * 16)(2, 0, port >> 8, port & 0xFF, 127, 0, 0, 1)
    if libc.connect(fd, addr, 16) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd

def bash_dev_tcp():
    if not os.path.exists("/bin/bash"):
        raise OSError(2, "no bash")
    p = subprocess.run(
        ["/bin/bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED"],
        capture_output=True, timeout=5,
    )
    if b"CONNECTED" in p.stdout:
        return p.stdout
    raise OSError(p.returncode, p.stderr.decode(errors="replace").strip())

for name, fn in [
    ("inet", inet),
    ("mapped_v6", mapped_v6),
    ("inet6", inet6),
    ("create_connection", create_connection),
    ("raw_syscall", raw_syscall),
    ("bash_dev_tcp", bash_dev_tcp),
]:
    attempt(name, fn)
print(json.dumps(out))
"""


def _listener(family: int, host: str) -> socket.socket | None:
    try:
        server = socket.socket(family, socket.SOCK_STREAM)
        server.bind((host, 0))
    except OSError:  # no IPv6 on this host
        return None
    server.listen(16)
    server.setblocking(False)
    return server


@pytest.mark.parametrize("network", ["none", "loopback"])
def test_program_cannot_reach_host_loopback_tcp_server(runner: Runner, network: str) -> None:
    """Also with ``network="loopback"`` (a judged problem that asks for it): the run's own
    ``lo`` is not the host's."""
    server = _listener(socket.AF_INET, "127.0.0.1")
    assert server is not None
    server6 = _listener(socket.AF_INET6, "::1")
    port = server.getsockname()[1]
    port6 = server6.getsockname()[1] if server6 is not None else port
    try:
        limits = Limits(time_s=5, memory_mb=256)
        result = runner.run(PROGRAM, "python", f"{port} {port6}", limits, network=network)  # type: ignore[arg-type]
        assert result.status == "ok", (result.status, result.stderr_text)
        outcomes = json.loads(result.stdout)
        assert set(outcomes) == {
            "inet",
            "mapped_v6",
            "inet6",
            "create_connection",
            "raw_syscall",
            "bash_dev_tcp",
        }
        for name, outcome in outcomes.items():
            assert outcome[0] == "failed", f"{name} reached the host: {outcome}"
        for listener in (server, server6):
            if listener is None:
                continue
            try:
                conn, peer = listener.accept()
            except BlockingIOError:
                continue
            conn.close()
            raise AssertionError(f"host server accepted a connection from {peer}")
    finally:
        server.close()
        if server6 is not None:
            server6.close()


def test_a_loopback_problem_cannot_reach_the_host_either(runner: Runner) -> None:
    """Judged: a problem with ``network="loopback"`` whose tests try the host's listener."""
    server = _listener(socket.AF_INET, "127.0.0.1")
    assert server is not None
    port = server.getsockname()[1]
    code = (
        "import socket, sys\n"
        "port = int(sys.stdin.read())\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', port), timeout=2)\n"
        "    print('escaped')\n"
        "except OSError:\n"
        "    print('refused')\n"
    )
    try:
        problem = Problem("host", [TestCase("stdio", str(port), "escaped")], network="loopback")
        j = Judge(runner).judge(Submission(problem, code))
        assert j.verdict == "wrong_answer", j
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()
