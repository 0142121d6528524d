"""What the routes share: the executor, the settings, async batches, and result waiting.

Results are handed from the executor's worker threads to the event loop with
``call_soon_threadsafe``: no thread is parked per waiting request, so thousands of requests
can wait on a few sandboxes.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from ..executor import BatchHandle, Job, JobResult, LocalExecutor
from ..scheduler import HIGH, LOW, NORMAL
from . import tenants
from .settings import Settings
from .tenants import Tenant

log = logging.getLogger("assay.server")

PRIORITIES = {"high": HIGH, "normal": NORMAL, "low": LOW}
#: Batches larger than this are submitted from a thread (planning them takes a moment).
_INLINE_SUBMIT = 16


@dataclass(slots=True)
class Kept:
    handle: BatchHandle
    results: list[JobResult]
    #: The tenant whose batch it is: no other (but an admin) may find it.
    owner: str
    #: Roughly what ``results`` hold in memory.
    nbytes: int = 0

    def add(self, r: JobResult) -> None:
        self.results.append(r)  # atomic: the executor's threads need no lock
        self.nbytes += _result_bytes(r)


def _result_bytes(r: JobResult) -> int:
    n = 256
    if r.result is not None:
        n += len(r.result.stdout) + len(r.result.stderr)
    if r.judgement is not None:
        n += sum(96 + len(t.message) for t in r.judgement.tests)
    return n


class Service:
    def __init__(self, executor: LocalExecutor, settings: Settings) -> None:
        self.executor = executor
        self.settings = settings
        #: Async batches by id with their results so far, oldest first (finished ones are
        #: evicted past the cap).
        self.batches: collections.OrderedDict[str, Kept] = collections.OrderedDict()
        self.inflight: set[BatchHandle] = set()
        self.closing = False
        self.started = time.time()

    async def submit(
        self,
        jobs: Sequence[Job],
        *,
        caller: str,
        priority: str = "normal",
        deadline_s: float | None = None,
        stop_on_failure: bool = False,
    ) -> BatchHandle:
        """Queue ``jobs`` (raises Overloaded / ValidationError, nothing queued then)."""
        kw = {
            "caller": caller,
            "priority": PRIORITIES[priority],
            "deadline_s": deadline_s,
            "stop_on_failure": stop_on_failure,
        }
        if len(jobs) > _INLINE_SUBMIT:
            handle = await asyncio.to_thread(lambda: self.executor.submit(jobs, **kw))  # type: ignore[arg-type]
        else:
            handle = self.executor.submit(jobs, **kw)  # type: ignore[arg-type]
        _log_batch(handle, caller, priority)
        return handle

    async def run_one(self, job: Job, *, caller: str) -> JobResult:
        """Queue one job and wait for its result (a plain run from /run_code or /v1/run)."""
        handle = await self.submit([job], caller=caller)
        (result,) = await self.results(handle)
        return result

    async def results(self, handle: BatchHandle) -> list[JobResult]:
        """Every result of ``handle`` in submission order; cancels it if the caller goes."""
        self.inflight.add(handle)
        try:
            out: list[JobResult | None] = [None] * handle.size
            async for r in stream(handle):
                out[r.index] = r
            return [r for r in out if r is not None]
        except asyncio.CancelledError:
            handle.cancel()
            raise
        finally:
            self.inflight.discard(handle)

    def keep(self, handle: BatchHandle, owner: Tenant) -> None:
        """Keep ``handle``'s results for ``GET /v1/batches/{id}``, as ``owner``'s."""
        kept = Kept(handle, [], owner.name)
        handle.add_callback(kept.add)
        self.batches[handle.id] = kept
        excess = len(self.batches) - self.settings.max_batches_kept
        for bid in [b for b, k in self.batches.items() if k.handle.done][: max(0, excess)]:
            del self.batches[bid]
        total = sum(k.nbytes for k in self.batches.values())
        for bid, k in list(self.batches.items()):
            if total <= self.settings.max_batches_kept_bytes:
                break
            if k.handle.done and bid != handle.id:
                total -= k.nbytes
                del self.batches[bid]

    def find(self, batch_id: str, who: Tenant) -> Kept | None:
        """The kept batch ``batch_id`` if ``who`` may see it; None if there is none or it is
        another tenant's (the two are not told apart: an id is never confirmed)."""
        kept = self.batches.get(batch_id)
        return kept if kept is not None and who.owns(kept.owner) else None

    async def drain(self) -> None:
        """Graceful shutdown: wait for in-flight batches, then cancel what is left, so every
        job ends with an explicit result (``cancelled``), never silently."""
        self.closing = True
        kept = [k.handle for k in self.batches.values()]
        pending = [h for h in [*self.inflight, *kept] if not h.done]
        deadline = time.monotonic() + self.settings.shutdown_grace_s
        while pending and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            pending = [h for h in pending if not h.done]
        for h in pending:
            n = h.cancel()
            log.warning("shutdown: batch %s cancelled with %d unfinished jobs", h.id, n)


def _log_batch(handle: BatchHandle, caller: str, priority: str) -> None:
    """One log line when a batch is queued and one when its last result is in (ids, counts,
    verdicts and duration; never code or output)."""
    extra = {"batch_id": handle.id, "caller": caller}
    log.info(
        "batch queued",
        extra={**extra, "event": "batch_queued", "jobs": handle.size, "priority": priority},
    )
    started = time.monotonic()
    verdicts: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()

    def seen(result: JobResult) -> None:
        with lock:
            verdicts[result.verdict or f"({result.outcome})"] += 1
            if sum(verdicts.values()) != handle.size:
                return
        log.info(
            "batch done",
            extra={
                **extra,
                "event": "batch_done",
                "jobs": handle.size,
                "verdicts": dict(verdicts),
                "duration_s": round(time.monotonic() - started, 4),
            },
        )

    handle.add_callback(seen)


async def stream(handle: BatchHandle) -> AsyncIterator[JobResult]:
    """Results of ``handle`` as they finish (those already in first)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[JobResult] = asyncio.Queue()

    def push(r: JobResult) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, r)
        except RuntimeError:  # the loop is gone: nobody is listening any more
            pass

    handle.add_callback(push)
    seen: set[int] = set()
    while len(seen) < handle.size:
        r = await queue.get()
        if r.index in seen:
            continue
        seen.add(r.index)
        yield r


async def service(request: Request) -> Service:
    svc: Service = request.app.state.service
    return svc


def caller_of(scope: Mapping[str, Any], asked: str | None = None) -> str:
    """Fair-share key and the records' caller: the tenant (see :mod:`.tenants`: neither a
    header nor a body field can change it). Without tokens: ``asked`` (a body's field), else
    the ``X-Assay-Caller`` header, else the client address."""
    who = tenants.of_scope(scope)
    if who is not tenants.ANONYMOUS:
        return who.name
    if asked:
        return asked
    for name, value in scope["headers"]:
        if name == b"x-assay-caller" and value:
            return str(value.decode("latin-1")[:64])
    client = scope.get("client")
    return str(client[0]) if client else "http"


def caller(request: Request) -> str:
    """:func:`caller_of` a route's request."""
    return caller_of(request.scope)


#: The service, as a route parameter.
Svc = Annotated[Service, Depends(service)]
#: The request's tenant, as a route parameter.
Who = Annotated[Tenant, Depends(tenants.tenant)]
