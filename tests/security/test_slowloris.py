"""Claim: one client cannot hold ``assay serve``'s connections or grow it with a request head
(issue 26; ``server._protocol``). Attack: slow and endless request heads;
slowloris connections are closed at the head deadline, and a head that never ends is cut
off at its cap instead of growing the service."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from serve_helpers import served, status_kib

pytestmark = pytest.mark.slow
#: ``defaults.SERVER_HEAD_TIMEOUT_S`` (spelt out: the test also runs against code without it).
HEAD_TIMEOUT_S = 10.0


def _still_open(s: socket.socket) -> bool:
    s.setblocking(False)
    try:
        return s.recv(1) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def test_trickling_heads_are_disconnected_and_others_are_served() -> None:
    with served("--slots", "1") as (url, _pid):
        host, port = "127.0.0.1", int(url.rsplit(":", 1)[1])
        slow = []
        for _ in range(300):
            s = socket.create_connection((host, port), timeout=5)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ")
            slow.append(s)
        started = time.monotonic()
        assert httpx.get(url + "/healthz", timeout=5).status_code == 200
        assert time.monotonic() - started < 2.0
        time.sleep(HEAD_TIMEOUT_S + 3)
        for s in slow[:10]:  # a byte now and then does not extend the deadline
            try:
                s.sendall(b"a")
            except OSError:
                pass
        open_ = sum(_still_open(s) for s in slow)
        for s in slow:
            s.close()
    assert open_ == 0, f"{open_} of 300 slow connections still open"


def test_an_endless_head_is_cut_off_without_growing_the_service() -> None:
    with served("--slots", "1") as (url, pid):
        before = status_kib(pid, "VmHWM")
        s = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        line = b"X-Pad: " + b"a" * 1000 + b"\r\n"
        sent = 0
        with pytest.raises(OSError):  # reset by the service once past the cap
            while sent < 200 << 20:
                s.sendall(line * 100)
                sent += len(line) * 100
        s.close()
        grew_mib = (status_kib(pid, "VmHWM") - before) / 1024
        assert httpx.get(url + "/healthz", timeout=5).status_code == 200
    assert sent < 16 << 20, f"the service took {sent >> 20} MiB of headers"
    assert grew_mib < 16, f"assay serve grew {grew_mib:.0f} MiB on one request head"
