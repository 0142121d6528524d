"""The supervisor's wait for a run (sandbox/_run.py): a short run wakes it once, for the
init's exit record, and output is captured whole and in order whenever it is written."""

from __future__ import annotations

import os
import select
import stat
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
