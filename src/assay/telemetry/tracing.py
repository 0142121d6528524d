"""Optional OpenTelemetry spans: batch -> job (with its queue wait) -> compile and test runs.

Off by default and free when off: every entry point returns at once unless tracing was turned
on, by :func:`configure_tracing` (a ``TracerProvider`` of your own, e.g. with the SDK's
in-memory exporter) or :func:`configure_from_env` (an OTLP/HTTP exporter when
``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set; ``assay
serve`` calls it). Needs the ``otel`` extra (``opentelemetry-sdk``).

The span tree, so one slow job can be found from the trainer's side:

* ``assay.batch`` (``assay.batch_id``, ``assay.caller``, ``assay.jobs``): from submission to the
  last result;
* ``assay.job`` (``assay.job_id``, ``assay.language``, ``assay.attempt``,
  ``assay.queue_wait_s``, ``assay.verdict``): one attempt on a worker, child of its batch, with
  an ``assay.queue_wait`` child covering the time it waited in the queue;
* ``assay.compile`` and ``assay.run``: the runner's build and each sandboxed run, children of
  the job: runs made in the job's thread (stdio tests, plain runs) and runs the judge starts
  on its background threads (call tests: ``assay.test_kind`` ``call``; script and pytest
  tests: ``script`` for the submission's run and ``harness`` for the test runner's), which
  :func:`in_thread` hands the job's span to.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = [
    "JobSpan",
    "configure_from_env",
    "configure_tracing",
    "enabled",
    "end_job",
    "in_thread",
    "span",
    "start_batch",
    "start_job",
]

_state: dict[str, Any] = {"tracer": None}
_batches: dict[str, Any] = {}
_lock = threading.Lock()


def enabled() -> bool:
    return _state["tracer"] is not None


def configure_tracing(provider: Any | None) -> None:
    """Trace with ``provider`` (an SDK ``TracerProvider``); ``None`` turns tracing off."""
    if provider is None:
        _state["tracer"] = None
        return
    _state["tracer"] = provider.get_tracer("assay")


def configure_from_env() -> bool:
    """Turn tracing on with an OTLP/HTTP exporter if an OTLP endpoint is configured.

    Returns whether tracing is on. Raises ``RuntimeError`` naming the extra if an endpoint is
    set but the SDK is not installed (asking for traces and silently getting none is worse).
    """
    if not (
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    ):
        return False
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise RuntimeError(
            "tracing: OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is missing; "
            "pip install 'assay[otel]'"
        ) from exc
    service = os.environ.get("OTEL_SERVICE_NAME", "assay")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    configure_tracing(provider)
    return True


def _ns(wall_s: float) -> int:
    return int(wall_s * 1e9)


def start_batch(handle: Any, caller: str, priority: int) -> None:
    """Open the span of a batch; it ends by itself when the batch's last result arrives."""
    tracer = _state["tracer"]
    if tracer is None:
        return
    from opentelemetry import context

    batch_span = tracer.start_span(
        "assay.batch",
        context=context.Context(),  # a batch is a root: never nested in a request's job span
        attributes={
            "assay.batch_id": handle.id,
            "assay.caller": caller,
            "assay.jobs": handle.size,
            "assay.priority": priority,
        },
    )
    with _lock:
        _batches[handle.id] = batch_span
    seen = [0]

    def done(result: Any) -> None:
        with _lock:
            seen[0] += 1
            if seen[0] < handle.size:
                return
            _batches.pop(handle.id, None)
        batch_span.end()

    if handle.size == 0:
        done(None)
    else:
        handle.add_callback(done)


class JobSpan:
    """An open ``assay.job`` span, current in the worker's thread until :func:`end_job`."""

    __slots__ = ("span", "token")

    def __init__(self, span: Any, token: Any) -> None:
        self.span = span
        self.token = token


def start_job(
    job_id: str, batch_id: str, language: str, attempt: int, queue_wait_s: float
) -> JobSpan | None:
    """Open a job attempt's span (child of its batch) and its queue-wait child; make it the
    current span of this thread so the runner's compile and run spans nest under it."""
    tracer = _state["tracer"]
    if tracer is None:
        return None
    from opentelemetry import context, trace

    with _lock:
        parent = _batches.get(batch_id)
    parent_ctx = trace.set_span_in_context(parent) if parent is not None else context.Context()
    now = time.time()
    job = tracer.start_span(
        "assay.job",
        context=parent_ctx,
        attributes={
            "assay.job_id": job_id,
            "assay.batch_id": batch_id,
            "assay.language": language,
            "assay.attempt": attempt,
            "assay.queue_wait_s": queue_wait_s,
        },
        start_time=_ns(now - queue_wait_s),
    )
    waited = tracer.start_span(
        "assay.queue_wait",
        context=trace.set_span_in_context(job),
        start_time=_ns(now - queue_wait_s),
    )
    waited.end(end_time=_ns(now))
    token = context.attach(trace.set_span_in_context(job))
    return JobSpan(job, token)


def end_job(job: JobSpan | None, verdict: str, reason: str = "") -> None:
    """Close a job span with its verdict (``sandbox_error`` marks the span as an error)."""
    if job is None:
        return
    from opentelemetry import context
    from opentelemetry.trace import Status, StatusCode

    job.span.set_attribute("assay.verdict", verdict)
    if verdict == "sandbox_error":
        job.span.set_status(Status(StatusCode.ERROR, reason[:200]))
    context.detach(job.token)
    job.span.end()


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """A child span of the current job, or nothing when no job span is current (tracing off,
    or a thread the job's context did not reach), so no orphan spans are made."""
    tracer = _state["tracer"]
    if tracer is None:
        yield None
        return
    from opentelemetry import trace

    if not trace.get_current_span().get_span_context().is_valid:
        yield None
        return
    with tracer.start_as_current_span(name, attributes=dict(attributes or {})) as current:
        yield current


def in_thread(
    name: str, fn: Callable[[], T], attributes: Mapping[str, Any] | None = None
) -> Callable[[], T]:
    """``fn`` to be called on another thread inside a ``name`` span whose parent is the span
    current here (the job's): a thread does not inherit this one's context, so without it a
    run made there would be untraced or an orphan. ``fn`` itself when tracing is off or no
    span is current (nothing to attach to; costs nothing)."""
    tracer = _state["tracer"]
    if tracer is None:
        return fn
    from opentelemetry import trace

    parent = trace.get_current_span()
    if not parent.get_span_context().is_valid:
        return fn
    ctx = trace.set_span_in_context(parent)
    attrs = dict(attributes or {})

    def traced() -> T:
        with tracer.start_as_current_span(name, context=ctx, attributes=attrs):
            return fn()

    return traced
