"""A session step awaited on an event loop (``sessions.awaited``, the service's path): the
same results, order and records as ``Session.exec``, with what must block done on a thread."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from assay import LocalExecutor, Runner
from assay.executor import RunJob
from assay.scheduler import HIGH, LOW
from assay.sessions import ExecStep, Session, SessionEnded, SessionLimits
from assay.sessions.awaited import awaitable, exec_awaited
from assay.telemetry import MemoryWriter

T = TypeVar("T")
SMALL = SessionLimits(cpu_s=60, memory_mb=256, processes=32, disk_mb=64)


class Threads:
    """``off_loop`` for the tests, on a pool of its own (as the service's session pool):
    counts what went to a thread."""

    pool = ThreadPoolExecutor(8, thread_name_prefix="test-off-loop")

    def __init__(self) -> None:
        self.used = 0

    async def __call__(self, fn: Callable[[], T]) -> T:
        self.used += 1
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn)


@pytest.fixture
def executor(runner: Runner, tmp_path: Path) -> Iterator[LocalExecutor]:
    with LocalExecutor(runner, slots=1, state_dir=tmp_path, records=MemoryWriter()) as ex:
        yield ex


def awaited(session: Session, command: str, off_loop: Threads | None = None, **kw: Any) -> Any:
    step = ExecStep(command, **kw)
    return asyncio.run(exec_awaited(session, step, off_loop=off_loop or Threads()))


def test_an_awaited_step_is_the_step_exec_gives(executor: LocalExecutor) -> None:
    threads = Threads()
    with Session(executor, limits=SMALL) as s:
        assert awaitable(s)
        first = awaited(
            s, "cd /tmp && export X=7 && printf 'a\\377'; echo err >&2; exit 3", threads
        )
        again = s.exec("cd /tmp && export X=7 && printf 'a\\377'; echo err >&2; exit 3")
        for field in ("exit_code", "stdout", "stderr", "timed_out", "reason"):
            assert getattr(first, field) == getattr(again, field), field
        assert (first.stdout, first.exit_code) == (b"a\xff", 3)
        assert awaited(s, "pwd; echo $X", threads).stdout == b"/tmp\n7\n"  # state carried
        assert threads.used == 0  # nothing blocked: no thread
        assert s.steps == 3
    kinds = [r["kind"] for r in executor.records.records]  # type: ignore[attr-defined]
    assert kinds.count("session_step") == 3


def test_timeouts_and_a_large_stdin(executor: LocalExecutor) -> None:
    threads = Threads()
    with Session(executor, limits=SMALL) as s:
        slow = awaited(s, "echo a; sleep 5", threads, timeout_s=0.5)
        assert (slow.timed_out, slow.reason, slow.stdout) == (True, "timeout", b"a\n")
        data = bytes(range(256)) * 1024  # 256 KiB: sent from a thread
        big = awaited(s, "cat | md5sum", threads, stdin=data)
        assert big.exit_code == 0 and threads.used == 1
        import hashlib

        assert big.stdout.split()[0].decode() == hashlib.md5(data).hexdigest()


def test_steps_of_one_session_wait_for_each_other(executor: LocalExecutor) -> None:
    """Two awaited steps and a blocking one at once: one at a time, none lost (the second
    waits for the session's step lock on a thread)."""
    threads = Threads()
    with Session(executor, limits=SMALL) as s:

        async def both() -> list[Any]:
            one = exec_awaited(s, ExecStep("echo 1 >> log; sleep 0.3"), off_loop=threads)
            two = exec_awaited(s, ExecStep("echo 2 >> log; sleep 0.3"), off_loop=threads)
            return list(await asyncio.gather(one, two))

        blocking = threading.Thread(target=s.exec, args=("echo 3 >> log; sleep 0.3",))
        started = time.monotonic()
        blocking.start()
        steps = asyncio.run(both())
        blocking.join()
        assert time.monotonic() - started >= 0.85  # three 0.3 s steps, not side by side
        assert all(step.exit_code == 0 for step in steps)
        assert sorted(s.read_file("log").split()) == [b"1", b"2", b"3"]
        assert threads.used >= 1


def test_an_awaited_step_takes_its_turn_in_the_scheduler(executor: LocalExecutor) -> None:
    """As ``exec``: a high-priority step overtakes a queued low batch, it waits for at most
    the run holding the only slot."""
    with Session(executor, limits=SMALL, priority=HIGH) as s:
        done: list[float] = []
        executor.submit(
            [RunJob("import time; time.sleep(0.4)")] * 4,
            priority=LOW,
            caller="trainer",
            on_result=lambda _r: done.append(time.monotonic()),
        )
        time.sleep(0.1)  # the first run holds the only slot
        awaited(s, "true")
        finished = time.monotonic()
        while len(done) < 4:
            time.sleep(0.05)
    assert sum(f < finished for f in done) <= 1, (done, finished)


def test_an_agent_that_dies_mid_step_ends_the_session(executor: LocalExecutor) -> None:
    s = Session(executor, limits=SMALL)
    try:
        with pytest.raises(SessionEnded) as ended:
            awaited(s, "kill -9 $PPID; sleep 5")
        assert ended.value.reason == "crashed" and s.end_reason == "crashed"
        with pytest.raises(SessionEnded):
            awaited(s, "true")
    finally:
        s.close()


def test_sessions_whose_steps_go_elsewhere_are_not_awaited(runner: Runner) -> None:
    class Elsewhere(Session):
        pass

    with Session(runner, limits=SMALL) as s:
        assert awaitable(s)  # on a runner: no executor's turn to wait for
        assert awaited(s, "echo on-a-runner").stdout == b"on-a-runner\n"
    assert not awaitable(object.__new__(Elsewhere))


def test_a_step_past_its_callers_step_slots_waits_on_the_callers_threads(
    executor: LocalExecutor,
) -> None:
    """More awaited steps of one caller than its share of step slots: the rest wait for a
    slot on ``off_loop``'s threads (the service's session pool), never on the event loop's
    default pool, which batch submissions wait on; every step runs."""
    from assay import defaults

    share = max(1, (executor.slots * defaults.STEP_SLOTS_PER_SLOT + 1) // 2)
    threads = Threads()
    sessions = [Session(executor, limits=SMALL, caller="one") for _ in range(share + 1)]
    try:

        async def all_at_once() -> list[Any]:
            loop = asyncio.get_running_loop()
            default_pool_used: list[Any] = []
            original = loop.run_in_executor

            def spy(executor_: Any, fn: Any, *args: Any) -> Any:
                if executor_ is None:
                    default_pool_used.append(fn)
                return original(executor_, fn, *args)

            loop.run_in_executor = spy  # type: ignore[method-assign]
            steps = [
                exec_awaited(s, ExecStep("sleep 0.3; echo ok"), off_loop=threads) for s in sessions
            ]
            got = list(await asyncio.gather(*steps))
            assert default_pool_used == []
            return got

        steps = asyncio.run(all_at_once())
        assert [step.stdout for step in steps] == [b"ok\n"] * len(sessions)
        assert threads.used >= 1  # the one past the share waited on a session thread
    finally:
        for s in sessions:
            s.close()
