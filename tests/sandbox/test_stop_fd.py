"""RunRequest.stop_fd (sandbox/_run.py): the caller can end a run it needs no more of."""

from __future__ import annotations

import os
import signal
import threading
import time

from assay import Limits, Runner, RunRequest

LOOP = "while True:\n    pass\n"


def _request(source: str, stop_fd: int) -> RunRequest:
    return RunRequest(
        "python",
        ["/work/main.py"],
        [("main.py", source.encode(), 0o644)],
        limits=Limits(time_s=5),
        stop_fd=stop_fd,
    )


def test_writing_to_the_stop_fd_kills_the_run(runner: Runner) -> None:
    r, w = os.pipe()
    try:
        threading.Timer(0.3, lambda: os.write(w, b"x")).start()
        t0 = time.monotonic()
        result = runner.sandbox.execute(_request(LOOP, r))
        took = time.monotonic() - t0
        assert (result.status, result.signal) == ("runtime_error", signal.SIGKILL), result
        assert took < 3, took  # long before the 5 s CPU limit
        os.fstat(r)  # the caller's fd: the sandbox did not close it
    finally:
        os.close(r)
        os.close(w)


def test_a_stop_fd_that_hangs_up_kills_the_run(runner: Runner) -> None:
    r, w = os.pipe()
    try:
        threading.Timer(0.3, lambda: os.close(w)).start()
        result = runner.sandbox.execute(_request(LOOP, r))
        assert (result.status, result.signal) == ("runtime_error", signal.SIGKILL), result
    finally:
        os.close(r)


def test_an_untouched_stop_fd_changes_nothing(runner: Runner) -> None:
    r, w = os.pipe()
    try:
        result = runner.sandbox.execute(_request("print('done')\n", r))
        assert (result.status, result.stdout) == ("ok", b"done\n"), result
        # The slot the stopped runs used is still good for the next run.
        assert runner.run("print(6 * 7)").stdout == b"42\n"
    finally:
        os.close(r)
        os.close(w)
