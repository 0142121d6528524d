"""Claim: a sandboxed program cannot send a UDP datagram to a socket bound on the host's
loopback interface.

The test binds a real UDP socket on a random host loopback port and the program tries to
reach it with ``sendto`` (IPv4 and IPv4-mapped IPv6), with ``connect`` + ``send``, and
through libc directly. Every attempt must fail inside, and no datagram may arrive.
"""

from __future__ import annotations

import json
import socket

PROGRAM = r"""
import ctypes, json, os, socket, sys

port = int(sys.stdin.read())
out = {}

def attempt(name, fn):
    try:
        out[name] = ["sent", repr(fn())]
    except OSError as exc:
        out[name] = ["failed", exc.errno, str(exc)]

def sendto_v4():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    return s.sendto(b"escaped-sendto", ("127.0.0.1", port))

def sendto_mapped_v6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    return s.sendto(b"escaped-v6", ("::ffff:127.0.0.1", port))

def connect_send():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("localhost", port))
    return s.send(b"escaped-connect")

def raw_libc():
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(socket.AF_INET, socket.SOCK_DGRAM, 0)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    addr = (ctypes.c_ubyte * 16)(2, 0, port >> 8, port & 0xFF, 127, 0, 0, 1)
    n = libc.sendto(fd, b"escaped-libc", 12, 0, addr, 16)
    if n < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return n

for name, fn in [
    ("sendto_v4", sendto_v4),
    ("sendto_mapped_v6", sendto_mapped_v6),
    ("connect_send", connect_send),
    ("raw_libc", raw_libc),
]:
    attempt(name, fn)
print(json.dumps(out))
"""


def test_program_cannot_send_udp_to_host_loopback(run_py) -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.setblocking(False)
    port = receiver.getsockname()[1]
    try:
        result = run_py(PROGRAM, stdin=str(port))
        assert result.status == "ok", (result.status, result.stderr_text)
        outcomes = json.loads(result.stdout)
        assert set(outcomes) == {"sendto_v4", "sendto_mapped_v6", "connect_send", "raw_libc"}
        for name, outcome in outcomes.items():
            assert outcome[0] == "failed", f"{name} sent a datagram to the host: {outcome}"
        try:
            data, peer = receiver.recvfrom(65536)
        except BlockingIOError:
            pass
        else:
            raise AssertionError(f"host received a datagram {data!r} from {peer}")
    finally:
        receiver.close()
