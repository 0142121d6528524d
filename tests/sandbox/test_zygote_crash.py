"""The fork server dies (SIGKILL) in the middle of a run.

That run is our fault, not the program's: it must end promptly as ``sandbox_error`` (never
hang, never be judged as something the program did), and the pool must heal: the next run on
the same Sandbox gets a new fork server and succeeds. The pool size matters (idle sandboxes
of the dead fork server must not be handed out), so a few sizes are tried.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest
from _proctree import SLEEPER_WITH_CHILD, is_running, sandbox_program_with_child, wait_until

import assay
from assay import ExecResult, Limits, RunRequest, Sandbox

# Long enough that a silent re-run of the program (instead of an error) cannot finish in time.
SLEEP_LIMITS = Limits(time_s=2, wall_s=6)


def _python(code: str, limits: Limits | None = None) -> RunRequest:
    return RunRequest(
        "python", ["/work/main.py"], [("main.py", code.encode(), 0o644)], limits=limits or Limits()
    )


@pytest.mark.parametrize("pool_size", [0, None, 12], ids=["pool0", "pool-default", "pool12"])
def test_zygote_killed_mid_run(pool_size: int | None) -> None:
    with Sandbox(pool_size=pool_size) as sb:
        warm = sb.execute(_python("print('warm')"))
        assert (warm.status, warm.stdout) == ("ok", b"warm\n")
        zygote = sb.zygote_pid
        assert zygote is not None

        box: list[ExecResult] = []
        thread = threading.Thread(
            target=lambda: box.append(sb.execute(_python(SLEEPER_WITH_CHILD, SLEEP_LIMITS))),
            daemon=True,
        )
        thread.start()
        assert wait_until(lambda: sandbox_program_with_child(zygote), 20), (
            "the sleeping program never started"
        )
        os.kill(zygote, signal.SIGKILL)
        thread.join(SLEEP_LIMITS.effective_wall_s + 10)
        assert not thread.is_alive(), "the run hung after its fork server was killed"
        result = box[0]
        assert result.status == "sandbox_error", (
            f"a run whose fork server died must be a sandbox_error, got {result.status!r} "
            f"after {result.wall_s:.1f} s (stderr {result.stderr[:300]!r})"
        )
        assert result.wall_s < SLEEP_LIMITS.effective_wall_s, "the error took as long as a re-run"

        after = sb.execute(_python("print(6 * 7)"))
        assert (after.status, after.stdout) == ("ok", b"42\n"), after
        assert sb.zygote_pid not in (None, zygote), "a new fork server should have been started"
        again = sb.execute(_python("print('again')"))
        assert (again.status, again.stdout) == ("ok", b"again\n"), again


def test_runner_survives_zygote_crash_between_runs() -> None:
    """Killed while idle: the next run must simply succeed on a new fork server."""
    with assay.Runner(sandbox=Sandbox()) as runner:
        assert runner.run("print(1)").stdout == b"1\n"
        old = runner.sandbox.zygote_pid
        assert old is not None
        os.kill(old, signal.SIGKILL)
        assert wait_until(lambda: not is_running(old), 5)
        for i in range(3):
            r = runner.run(f"print({i})")
            assert (r.status, r.stdout) == ("ok", f"{i}\n".encode()), r
        assert runner.sandbox.zygote_pid != old
