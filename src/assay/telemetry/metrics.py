"""Prometheus metrics of an executor: what operators alert and dashboard on.

Naming follows Prometheus practice (and DESIGN.md): ``assay_`` prefix, base units, counters end
in ``_total``, and no per-job or per-problem labels, whose unbounded values would explode the
series count; per-job detail belongs in the execution records. :data:`METRICS` is the single
list of what exists, so documentation is generated from it (:func:`metrics_markdown`) rather
than kept in sync by hand.

Each :class:`Metrics` owns a fresh registry by default, so several executors (or tests) in one
process never collide on the global one; pass ``prometheus_client.REGISTRY`` to share it.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..types import ExecResult
from ._capacity import (
    BrokerGauges,
    BrokerProbe,
    NodeCapacity,
    NodeGauges,
    NodeProbe,
    SessionGauges,
    SessionProbe,
    node_name,
)
from ._remote import SpoolStats
from ._specs import METRICS, SPECS, MetricSpec


class _TestLike(Protocol):
    @property
    def verdict(self) -> str: ...


class _JudgementLike(Protocol):
    @property
    def tests(self) -> Sequence[_TestLike]: ...


class Execution(Protocol):
    """What the metrics read of an executor's execution (``executor.types.Execution``):
    telemetry sits below every layer and imports none of them, not even for types."""

    @property
    def verdict(self) -> str: ...

    @property
    def result(self) -> ExecResult | None: ...

    @property
    def judgement(self) -> _JudgementLike | None: ...


__all__ = [
    "METRICS",
    "SESSION_END_REASONS",
    "MetricSpec",
    "Metrics",
    "NodeCapacity",
    "metric_names",
    "metrics_markdown",
]

log = logging.getLogger(__name__)
C = TypeVar("C", bound=Collector)


def metric_names() -> list[tuple[str, str, str]]:
    """``(name, type, help)`` of every metric, in documentation order."""
    return [(spec.name, spec.kind, spec.help) for spec in METRICS]


def metrics_markdown() -> str:
    """The metrics as a Markdown table, for the README and the Grafana notes."""
    rows = ["| Metric | Type | Labels | Meaning |", "|---|---|---|---|"]
    for spec in METRICS:
        labels = ", ".join(f"`{label}`" for label in spec.labels) or "-"
        rows.append(f"| `{spec.name}` | {spec.kind} | {labels} | {spec.help} |")
    return "\n".join(rows) + "\n"


QueueProbe = Callable[[], tuple[int, float]]
BusyProbe = Callable[[], int]
MemoryProbe = Callable[[], tuple[int, int]]


class _ScrapeGauges(Collector):
    """Gauges computed when Prometheus scrapes, from functions the executor binds.

    A probe is read once per scrape, so depth and oldest age come from one consistent snapshot
    and nothing has to be kept up to date on the hot path. A probe that raises loses its
    samples for that scrape (logged) instead of failing the whole scrape.
    """

    def __init__(self) -> None:
        self.queue: QueueProbe | None = None
        self.busy: BusyProbe | None = None
        self.total: int | None = None

    def describe(self) -> Iterable[Metric]:
        return [_family(name) for name in _GAUGES]

    def collect(self) -> Iterable[Metric]:
        depth, age, busy, total = (_family(name) for name in _GAUGES)
        if self.queue is not None:
            try:
                n, oldest = self.queue()
                depth.add_metric([], float(n))
                age.add_metric([], max(0.0, float(oldest)))
            except Exception:  # a probe bug must not blank the executor's other metrics
                log.warning("queue probe failed during a metrics scrape", exc_info=True)
        if self.busy is not None:
            try:
                busy.add_metric([], float(self.busy()))
            except Exception:
                log.warning("workers probe failed during a metrics scrape", exc_info=True)
        if self.total is not None:
            total.add_metric([], float(self.total))
        return [depth, age, busy, total]


class _RecordGauges(Collector):
    """Spool and upload counts of a remote records writer, read from its ``stats()`` at scrape.

    The writer keeps its own counts (it exists before any registry and may outlive one), so
    nothing couples the upload thread to Prometheus. Writers without ``stats()`` (local
    directories, memory, off) export nothing here.
    """

    def __init__(self) -> None:
        self.stats: Callable[[], SpoolStats] | None = None

    def describe(self) -> Iterable[Metric]:
        return list(self._families())

    def _families(self) -> tuple[GaugeMetricFamily, CounterMetricFamily, CounterMetricFamily]:
        return (
            GaugeMetricFamily("assay_records_spooled", SPECS["assay_records_spooled"].help),
            CounterMetricFamily(
                "assay_records_uploaded", SPECS["assay_records_uploaded_total"].help
            ),
            CounterMetricFamily(
                "assay_records_upload_errors", SPECS["assay_records_upload_errors_total"].help
            ),
        )

    def collect(self) -> Iterable[Metric]:
        spooled, uploaded, errors = self._families()
        if self.stats is None:
            return [spooled, uploaded, errors]
        try:
            stats = self.stats()
        except Exception:
            log.warning("records probe failed during a metrics scrape", exc_info=True)
            return [spooled, uploaded, errors]
        spooled.add_metric([], float(stats.spooled))
        uploaded.add_metric([], float(stats.uploaded))
        errors.add_metric([], float(stats.upload_errors))
        return [spooled, uploaded, errors]


class _CompileCacheCounters(Collector):
    """Hits and misses of the runner's on-disk compile cache, which counts them itself."""

    def __init__(self) -> None:
        self.cache: Any = None

    def describe(self) -> Iterable[Metric]:
        return list(self._families())

    @staticmethod
    def _families() -> tuple[CounterMetricFamily, CounterMetricFamily]:
        return (
            CounterMetricFamily(
                "assay_compile_cache_hits", SPECS["assay_compile_cache_hits_total"].help
            ),
            CounterMetricFamily(
                "assay_compile_cache_misses", SPECS["assay_compile_cache_misses_total"].help
            ),
        )

    def collect(self) -> Iterable[Metric]:
        hits, misses = self._families()
        if self.cache is not None:
            hits.add_metric([], float(getattr(self.cache, "hits", 0)))
            misses.add_metric([], float(getattr(self.cache, "misses", 0)))
        return [hits, misses]


#: Why a session ends (``assay.sessions.types.EndReason``; a test keeps the two equal).
SESSION_END_REASONS = (
    "closed", "ttl", "idle_ttl", "cpu_limit", "memory_limit", "pids_limit", "crashed",
    "node_lost",
)  # fmt: skip

#: The security events :func:`security_events` can tell from a result.
SECURITY_KINDS = ("seccomp_kill", "output_flood", "leftover_processes")


def _statuses(ex: Execution) -> set[str]:
    """Every status of an execution: its verdict, its run's status and its tests' verdicts."""
    out = {ex.verdict}
    if ex.result is not None:
        out.add(ex.result.status)
    if ex.judgement is not None:
        out.update(t.verdict for t in ex.judgement.tests)
    return out


def security_events(ex: Execution) -> list[str]:
    """Security-relevant events visible in an execution's results (see :data:`SECURITY_KINDS`).

    A seccomp kill shows as SIGSYS on a plain run's result; judged tests carry no signal, so it
    is only seen there when the run's result is kept. Processes left alive when the program
    exited (killed at teardown) are reported by the sandbox on a plain run's result.
    """
    events = []
    if ex.result is not None and ex.result.signal == signal.SIGSYS:
        events.append("seccomp_kill")
    flooded = "output_limit" in _statuses(ex)
    if ex.result is not None and (ex.result.stdout_truncated or ex.result.stderr_truncated):
        flooded = True
    if flooded:
        events.append("output_flood")
    if ex.result is not None and ex.result.leftover_processes > 0:
        events.append("leftover_processes")
    return events


_GAUGES = (
    "assay_queue_depth",
    "assay_queue_oldest_age_seconds",
    "assay_workers_busy",
    "assay_workers",
)


def _family(name: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, SPECS[name].help)


class Metrics:
    """The executor's metrics, behind methods named for what happened."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._submitted = self._counter("assay_jobs_submitted_total")
        self._completed = self._counter("assay_jobs_completed_total")
        self._rejected = self._counter("assay_jobs_rejected_total")
        self._queue_wait = self._histogram("assay_queue_wait_seconds")
        self._run = self._histogram("assay_job_run_seconds")
        self._sandbox_start = self._histogram("assay_sandbox_start_seconds")
        self._cache_hits = self._counter("assay_cache_hits_total")
        self._cache_misses = self._counter("assay_cache_misses_total")
        self._retries = self._counter("assay_retries_total")
        self._sandbox_errors = self._counter("assay_sandbox_errors_total")
        self._gauges = self._collector(_ScrapeGauges())
        self._records = self._collector(_RecordGauges())
        self._acquire = self._histogram("assay_sandbox_acquire_seconds")
        self._duration = self._histogram("assay_job_duration_seconds")
        self._timeouts = self._counter("assay_timeouts_total")
        self._memory_kills = self._counter("assay_memory_kills_total")
        self._security = self._counter("assay_security_events_total")
        for kind in SECURITY_KINDS:  # present from the start, so increase() sees the first
            self._security.labels(kind=kind)
        self._compile_cache = self._collector(_CompileCacheCounters())
        self._sessions = self._collector(SessionGauges())
        self._sessions_created = self._counter("assay_sessions_created_total")
        self._sessions_rejected = self._counter("assay_sessions_rejected_total")
        self._sessions_ended = self._counter("assay_sessions_ended_total")
        for reason in SESSION_END_REASONS:
            self._sessions_ended.labels(reason=reason)
        self._session_lifetime = self._histogram("assay_session_lifetime_seconds")
        self._nodes = self._collector(NodeGauges())
        self._broker = self._collector(BrokerGauges())
        self._claims = self._counter("assay_fleet_claims_total")
        self._fleet_jobs = self._counter("assay_fleet_jobs_total")
        self._duplicates = self._counter("assay_fleet_duplicate_results_total")

    def _counter(self, name: str) -> Counter:
        spec = SPECS[name]
        return Counter(name, spec.help, spec.labels, registry=self.registry)

    def _histogram(self, name: str) -> Histogram:
        spec = SPECS[name]
        return Histogram(name, spec.help, spec.labels, registry=self.registry, buckets=spec.buckets)

    def _collector(self, collector: C) -> C:
        """``collector`` (read at every scrape) in this registry."""
        self.registry.register(collector)
        return collector

    def submitted(self, language: str, n: int = 1) -> None:
        """``n`` jobs in ``language`` entered the queue."""
        self._submitted.labels(language=language).inc(n)

    def completed(self, language: str, verdict: str) -> None:
        """A job ended with ``verdict`` (or ``deadline``/``cancelled`` when it never ran)."""
        self._completed.labels(language=language, verdict=verdict).inc()

    def rejected(self, n: int = 1) -> None:
        """Admission control turned ``n`` jobs away."""
        self._rejected.inc(n)

    def observe_queue_wait(self, seconds: float) -> None:
        """A job waited ``seconds`` before starting (negative clock skew counts as 0)."""
        self._queue_wait.observe(max(0.0, seconds))

    def observe_run(self, seconds: float) -> None:
        """A job took ``seconds`` of wall time from start to verdict."""
        self._run.observe(max(0.0, seconds))

    def observe_sandbox_start(self, seconds: float) -> None:
        """Getting a ready sandbox took ``seconds`` (typically milliseconds)."""
        self._sandbox_start.observe(max(0.0, seconds))

    def cache_hit(self) -> None:
        self._cache_hits.inc()

    def cache_miss(self) -> None:
        self._cache_misses.inc()

    def retry(self) -> None:
        """An attempt is being retried after an infrastructure fault."""
        self._retries.inc()

    def sandbox_error(self) -> None:
        """Our infrastructure failed a run (principle 5: counted, never blamed on the program)."""
        self._sandbox_errors.inc()

    def bind_queue(self, fn: QueueProbe) -> None:
        """Read ``(depth, oldest age in seconds)`` from ``fn`` at every scrape."""
        self._gauges.queue = fn

    def bind_workers(
        self, busy_fn: BusyProbe, total: int, memory_mb: MemoryProbe | None = None
    ) -> None:
        """Read the busy-worker count from ``busy_fn`` at every scrape; the pool has ``total``.

        With ``memory_mb`` (``() -> (budget, reserved)`` MiB) the pool is this machine's one
        node of the ``assay_node_*`` gauges (named by :func:`node_name`): the local
        executor. A cluster executor, whose workers span nodes, binds without it and gives
        each node's capacity to :meth:`bind_nodes`, so its driver never poses as one node.
        """
        self._gauges.busy = busy_fn
        self._gauges.total = total
        if memory_mb is None:
            return
        node = node_name()

        def local() -> list[NodeCapacity]:
            budget, used = memory_mb()
            return [NodeCapacity(node, total, busy_fn(), budget << 20, used << 20)]

        self._nodes.probe = local

    def observe_execution(
        self, language: str, ex: Execution, seconds: float, acquire_s: float | None = None
    ) -> None:
        """One attempt of a job ran: its duration by language and verdict, its limit kills and
        the security events the supervisor can see in its results."""
        self._duration.labels(language=language, verdict=ex.verdict).observe(max(0.0, seconds))
        if acquire_s is not None:
            self._acquire.observe(max(0.0, acquire_s))
        statuses = _statuses(ex)
        if "time_limit" in statuses:
            self._timeouts.labels(language=language).inc()
        if "memory_limit" in statuses:
            self._memory_kills.labels(language=language).inc()
        for kind in security_events(ex):
            self._security.labels(kind=kind).inc()

    def bind_compile_cache(self, cache: Any) -> None:
        """Export the ``hits``/``misses`` counters of a compile cache at every scrape."""
        self._compile_cache.cache = cache

    def bind_records(self, writer: Any) -> None:
        """Export spool and upload counts of ``writer`` if it has a ``stats()`` method (a
        :class:`~assay.telemetry.FsspecWriter`); other writers have nothing to report."""
        writer = getattr(writer, "inner", writer)  # a TeeWriter feeding the dashboard
        stats = getattr(writer, "stats", None)
        self._records.stats = stats if callable(stats) else None

    def bind_sessions(self, probe: SessionProbe) -> None:
        """Read the session gauges from ``probe`` at every scrape (a session manager binds
        itself; the last one bound is exported)."""
        self._sessions.probe = probe

    def session_created(self) -> None:
        self._sessions_created.inc()

    def session_rejected(self) -> None:
        """A create was refused: the session cap or memory budget was full."""
        self._sessions_rejected.inc()

    def session_ended(self, reason: str, lifetime_s: float) -> None:
        """A session ended for ``reason`` after ``lifetime_s`` seconds."""
        self._sessions_ended.labels(reason=reason).inc()
        self._session_lifetime.observe(max(0.0, lifetime_s))

    def bind_nodes(self, probe: NodeProbe) -> None:
        """Read each node's capacity from ``probe`` at every scrape (one
        :class:`NodeCapacity` per node: the local executor's one, a cluster's many)."""
        self._nodes.probe = probe

    def bind_broker(self, probe: BrokerProbe) -> None:
        """Read a queue fleet's depth and lag by priority class from ``probe`` at scrape."""
        self._broker.probe = probe

    def broker_claimed(self, n: int) -> None:
        """A fleet worker claimed ``n`` jobs a dead or stalled worker had left pending."""
        self._claims.inc(n)

    def broker_finished(self, stored: int, duplicates: int = 0) -> None:
        """A fleet worker stored ``stored`` results, and dropped ``duplicates`` for jobs that
        had one already (a claimed job its first worker finished after all)."""
        self._fleet_jobs.inc(stored)
        self._duplicates.inc(duplicates)

    def render(self) -> bytes:
        """The registry in Prometheus text exposition format (what ``/metrics`` serves)."""
        return generate_latest(self.registry)
