"""Sandbox runs started in the background, on reused daemon threads.

A judged sample runs its sandbox in the background while the judge reads the harness's
reports (``scripts``), or talks to the program (``calls``) on a tier whose supervisor does
not serve the call channel itself (gVisor's; the default tier does, on the judging thread). Starting a thread for each run costs
more than the run's whole dispatch (clone, a new stack, thread state, exit); the threads here
wait for the next run instead. They are daemons, as a run always ends (its limits), and a
forked child starts with none.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from ..types import ExecResult

T = TypeVar("T")


class Task(Generic[T]):
    """One background call: ``done()`` never blocks, ``wait()`` does."""

    __slots__ = ("_finished", "_fn", "error", "value")

    def __init__(self, fn: Callable[[], T]) -> None:
        self._fn = fn
        self._finished = threading.Lock()
        self._finished.acquire()  # released when the call has returned or raised
        self.value: T | None = None
        self.error: BaseException | None = None

    def done(self) -> bool:
        return not self._finished.locked()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the call has ended (or ``timeout`` seconds); whether it has."""
        if not self._finished.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self._finished.release()
        return True

    def _call(self) -> None:
        try:
            self.value = self._fn()
        except BaseException as exc:
            self.error = exc


class _Pool:
    def __init__(self) -> None:
        self.tasks: queue.SimpleQueue[Task[object]] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.idle = 0

    def start(self, fn: Callable[[], T]) -> Task[T]:
        task = Task(fn)
        with self.lock:
            spawn = self.idle == 0
            if not spawn:
                self.idle -= 1
        self.tasks.put(task)  # type: ignore[arg-type]
        if spawn:
            threading.Thread(target=self._work, daemon=True, name="assay-run").start()
        return task

    def _work(self) -> None:
        while True:
            task = self.tasks.get()
            task._call()
            # Idle before the task is seen to end: a caller that waits for it and then
            # starts the next run finds this thread ready instead of starting another.
            with self.lock:
                self.idle += 1
            task._finished.release()


_pool = _Pool()


def _after_fork() -> None:
    global _pool
    _pool = _Pool()  # the parent's threads do not exist in a forked child


os.register_at_fork(after_in_child=_after_fork)


def outcome(task: Task[ExecResult]) -> ExecResult:
    """A finished sandbox run's result; ``sandbox_error`` (our fault) if the call raised."""
    task.wait()
    if task.value is not None:
        return task.value
    return failed(task.error)


def failed(error: BaseException | None) -> ExecResult:
    """The result of a run whose call raised ``error`` (or returned nothing): our fault."""
    why = f"internal error: {error!r}" if error is not None else "no result"
    return ExecResult(status="sandbox_error", stderr=why.encode()[:2000])


def start(fn: Callable[[], T]) -> Task[T]:
    """Call ``fn()`` on a background thread; the returned task holds its value or error."""
    return _pool.start(fn)
