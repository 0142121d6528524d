"""The supervisor's wait for a run (sandbox/_run.py): a short run wakes it once, for the
init's exit record, and output is captured whole and in order whenever it is written."""

from __future__ import annotations

import math
import os
import select
import signal
import socket
import stat
import threading
import time
import types
from typing import Any

import pytest

from assay import Limits, Runner
from assay.sandbox import _run


def test_a_short_run_wakes_the_supervisor_once_for_its_end(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The output pipes are read once the run is over (here: always, within the raised
    # threshold), so the first thing the supervisor wakes for is the init's exit record on
    # its socket, not the program's output or the pipes' ends (3 wake-ups per run before).
    monkeypatch.setattr(_run, "PIPES_AFTER_S", 30.0, raising=False)
    woken: list[list[str]] = []  # per wake-up: the kind of each ready fd

    class Poller:
        def __init__(self) -> None:
            self._poller = select.poll()

        def register(self, fd: Any, mask: int) -> None:
            self._poller.register(fd, mask)

        def unregister(self, fd: Any) -> None:
            self._poller.unregister(fd)

        def poll(self, timeout: int) -> list[tuple[int, int]]:
            events = self._poller.poll(timeout)
            if events:
                kinds = [os.fstat(fd).st_mode for fd, _ in events]
                woken.append(["socket" if stat.S_ISSOCK(m) else "pipe" for m in kinds])
            return events

    fake = types.SimpleNamespace(poll=Poller, POLLIN=select.POLLIN)
    monkeypatch.setattr(_run, "select", fake)
    for _ in range(5):
        woken.clear()
        result = runner.run("import sys\nprint(1)\nprint(2, file=sys.stderr)")
        assert (result.status, result.stdout, result.stderr) == ("ok", b"1\n", b"2\n")
        assert woken and woken[0] == ["socket"], woken  # the record alone


def test_output_that_fills_the_pipes_before_they_are_read_is_captured_whole(
    runner: Runner,
) -> None:
    # 1 MiB on each stream at once: the program waits in its writes until the pipes are
    # read (a 64 KiB pipe holds far less), then ends; nothing is lost or reordered.
    code = (
        "import os\n"
        "for fd, byte in ((1, b'o'), (2, b'e')):\n"
        "    view = memoryview(bytes(range(256)) * 4096 + byte)\n"
        "    while view:\n"
        "        view = view[os.write(fd, view):]\n"
    )
    result = runner.run(code, limits=Limits(time_s=5))
    assert result.status == "ok", result
    assert result.stdout == bytes(range(256)) * 4096 + b"o"
    assert result.stderr == bytes(range(256)) * 4096 + b"e"
    assert not (result.stdout_truncated or result.stderr_truncated)


def test_output_written_before_and_after_the_pipes_are_watched_stays_in_order(
    runner: Runner,
) -> None:
    code = (
        "import sys, time\n"
        "for i in range(6):\n"
        "    print(i, 'x' * 20000, flush=True)\n"
        f"    time.sleep({_run.PIPES_AFTER_S} / 2)\n"
    )
    result = runner.run(code, limits=Limits(time_s=5))
    assert result.status == "ok", result
    assert result.stdout == b"".join(f"{i} {'x' * 20000}\n".encode() for i in range(6))


class _Recorder:
    """A companion on one end of a socketpair: records what it reads and on which thread,
    and asks for the run to be stopped 0.1 s after the program's first line."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.stop_at = math.inf
        self.data = b""
        self.threads: set[int] = set()
        self.finished = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    def events(self) -> int:
        return select.POLLIN if self.sock.fileno() >= 0 else 0

    def ready(self, mask: int) -> None:
        self.threads.add(threading.get_ident())
        self.data += self.sock.recv(1 << 16)
        if b"\n" in self.data and self.stop_at == math.inf:
            self.stop_at = time.monotonic() + 0.1

    def finish(self) -> None:
        self.finished += 1
        self.sock.close()


def test_a_companion_is_served_by_the_supervising_thread_and_can_stop_the_run(
    runner: Runner,
) -> None:
    """RunRequest.companion: polled with the run's own descriptors on the thread that
    supervises it (the judge's call channel needs no thread of its own), finished once when
    the run is over, and its ``stop_at`` ends a run that is still going."""
    host, inside = socket.socketpair()
    companion = _Recorder(host)
    code = "import os\nos.write(3, b'ready\\n')\nwhile True:\n    pass\n"
    req = _run.RunRequest(
        "python",
        ["/work/main.py"],
        [("main.py", code.encode(), 0o644)],
        limits=Limits(time_s=5),
        pass_fds=(inside.detach(),),
        companion=companion,
    )
    t0 = time.monotonic()
    result = runner.execute(req)
    took = time.monotonic() - t0
    assert (result.status, result.signal) == ("runtime_error", signal.SIGKILL), result
    assert took < 3, took  # stopped, long before its 5 s of CPU
    assert companion.data == b"ready\n"
    assert companion.threads == {threading.get_ident()}
    assert companion.finished == 1
