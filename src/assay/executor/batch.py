"""A submitted batch: results stream in as jobs finish; sync, async and callback forms."""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import AsyncIterator, Callable, Iterator

from .types import JobResult, Outcome

Callback = Callable[[JobResult], None]


def new_batch_id() -> str:
    """128 random bits. A batch id is what a client shows to read or cancel its batch, so
    no id may be guessed from another (job ids, never shown to act on anything, stay cheap
    counters)."""
    return secrets.token_hex(16)


class BatchHandle:
    """Results of one :meth:`~assay.executor.LocalExecutor.submit` call.

    Iterate (``for r in handle`` or ``async for r in handle``) to get results in the order
    they finish, or :meth:`gather` them in submission order. Every job yields exactly one
    result: ``done``, ``deadline`` or ``cancelled``.
    """

    def __init__(self, batch_id: str, size: int, canceller: Callable[[BatchHandle], None]) -> None:
        self.id = batch_id
        self.size = size
        self._cond = threading.Condition()
        self._arrived: list[JobResult] = []
        self._slots: list[JobResult | None] = [None] * size
        self._callbacks: list[Callback] = []
        self._canceller = canceller
        self._streaming = 0  # consumers waiting for the next result, not for the last one
        #: Called once, with the last result stored and before any waiter wakes: the
        #: executor lets go of the batch (and of its results) before its caller has them.
        self._on_complete: Callable[[BatchHandle], None] | None = None

    # -- producer side (the executor) ------------------------------------------------------
    def _deliver(self, result: JobResult) -> bool:
        """Store a result unless its job already has one; returns whether it was stored."""
        with self._cond:
            if self._slots[result.index] is not None:
                return False
            self._slots[result.index] = result
            self._arrived.append(result)
            callbacks = list(self._callbacks)
            last = len(self._arrived) == self.size
            # Waking a waiter that only wants the whole batch for every result costs a
            # thread switch per job; wake it for the last one.
            if self._streaming and not last:
                self._cond.notify_all()
        if last:
            if self._on_complete is not None:
                try:
                    self._on_complete(self)
                except Exception:  # never keep the waiters waiting
                    import logging

                    logging.getLogger(__name__).exception("batch completion hook failed")
            with self._cond:
                self._cond.notify_all()
        for cb in callbacks:
            _safe(cb, result)
        return True

    # -- consumer side ---------------------------------------------------------------------
    @property
    def done(self) -> bool:
        with self._cond:
            return len(self._arrived) == self.size

    @property
    def finished(self) -> int:
        with self._cond:
            return len(self._arrived)

    def add_callback(self, fn: Callback) -> None:
        """Call ``fn(result)`` for every result, including those already in."""
        with self._cond:
            self._callbacks.append(fn)
            earlier = list(self._arrived)
        for result in earlier:
            _safe(fn, result)

    def cancel(self) -> int:
        """Give every unfinished job a ``cancelled`` result; returns how many were."""
        before = self.finished
        self._canceller(self)
        return self.finished - before

    def wait(self, timeout: float | None = None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: len(self._arrived) == self.size, timeout)

    def gather(self, timeout: float | None = None) -> list[JobResult]:
        """All results in submission order (blocks until every job has one)."""
        if not self.wait(timeout):
            raise TimeoutError(
                f"batch {self.id}: {self.finished}/{self.size} done after {timeout} s"
            )
        with self._cond:
            return [r for r in self._slots if r is not None]

    def _next(self, position: int, timeout: float | None) -> JobResult | None:
        with self._cond:
            self._streaming += 1
            try:
                self._cond.wait_for(
                    lambda: position < len(self._arrived) or position >= self.size, timeout
                )
            finally:
                self._streaming -= 1
            if position < len(self._arrived):
                return self._arrived[position]
            return None

    def __iter__(self) -> Iterator[JobResult]:
        for position in range(self.size):
            result = self._next(position, None)
            assert result is not None
            yield result

    async def __aiter__(self) -> AsyncIterator[JobResult]:
        for position in range(self.size):
            result = None
            while result is None:  # short waits so a cancelled task is not stuck in a thread
                result = await asyncio.to_thread(self._next, position, 0.5)
            yield result

    async def gather_async(self) -> list[JobResult]:
        async for _ in self:
            pass
        return self.gather(0)

    def counts(self) -> dict[str, int]:
        """Results so far by verdict (or outcome when there is no verdict)."""
        out: dict[str, int] = {}
        with self._cond:
            for r in self._arrived:
                key = r.verdict or r.outcome
                out[key] = out.get(key, 0) + 1
        return out


def _safe(fn: Callback, result: JobResult) -> None:
    # A broken callback must not take the executor's worker down with it.
    try:
        fn(result)
    except Exception:
        import logging

        logging.getLogger("assay.executor").exception("result callback failed")


def ended(index: int, job_id: str, outcome: Outcome, reason: str, wait_s: float) -> JobResult:
    """A result for a job that did not run to the end: no verdict, no reward."""
    return JobResult(
        index=index, job_id=job_id, outcome=outcome, reason=reason, queue_wait_s=wait_s
    )
