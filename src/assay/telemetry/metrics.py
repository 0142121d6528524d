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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["METRICS", "MetricSpec", "Metrics", "metric_names", "metrics_markdown"]

log = logging.getLogger(__name__)

#: Seconds a job may wait: from "picked at once" to "queued behind a long batch".
_QUEUE_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
#: Seconds a job runs: programs are judged within seconds, whole test suites within minutes.
_RUN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)
#: Seconds to get a sandbox: a warm fork takes 1-2 ms, a cold start tens of milliseconds.
_START_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1)


@dataclass(frozen=True)
class MetricSpec:
    """One exported metric: exposition name, Prometheus type, help text, labels, buckets."""

    name: str
    kind: Literal["counter", "histogram", "gauge"]
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()


#: Every metric an executor exports; the README table is generated from this.
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "assay_jobs_submitted_total", "counter", "Jobs accepted into the queue.", ("language",)
    ),
    MetricSpec(
        "assay_jobs_completed_total",
        "counter",
        "Jobs finished, by verdict; 'deadline' and 'cancelled' for jobs that never ran.",
        ("language", "verdict"),
    ),
    MetricSpec(
        "assay_jobs_rejected_total",
        "counter",
        "Jobs refused by admission control because the queue was full.",
    ),
    MetricSpec(
        "assay_queue_wait_seconds",
        "histogram",
        "Time from submission until a worker started the job.",
        buckets=_QUEUE_BUCKETS,
    ),
    MetricSpec(
        "assay_job_run_seconds",
        "histogram",
        "Wall time of a job from start to verdict (compile and all tests).",
        buckets=_RUN_BUCKETS,
    ),
    MetricSpec(
        "assay_sandbox_start_seconds",
        "histogram",
        "Time a job spent in the sandbox layer beyond its programs' own run time (fork, set-up, teardown).",
        buckets=_START_BUCKETS,
    ),
    MetricSpec(
        "assay_cache_hits_total", "counter", "Jobs answered from the result cache without a run."
    ),
    MetricSpec("assay_cache_misses_total", "counter", "Jobs looked up in the cache and run."),
    MetricSpec(
        "assay_retries_total", "counter", "Job attempts retried after an infrastructure fault."
    ),
    MetricSpec(
        "assay_sandbox_errors_total",
        "counter",
        "Infrastructure failures (sandbox_error): our fault, never the program's.",
    ),
    MetricSpec("assay_queue_depth", "gauge", "Jobs waiting in the queue (read at scrape time)."),
    MetricSpec(
        "assay_queue_oldest_age_seconds",
        "gauge",
        "Age of the oldest waiting job, 0 when the queue is empty (read at scrape time).",
    ),
    MetricSpec("assay_workers_busy", "gauge", "Workers running a job now (read at scrape time)."),
    MetricSpec("assay_workers", "gauge", "Workers in the pool."),
)
_SPECS = {spec.name: spec for spec in METRICS}


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


_GAUGES = (
    "assay_queue_depth",
    "assay_queue_oldest_age_seconds",
    "assay_workers_busy",
    "assay_workers",
)


def _family(name: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, _SPECS[name].help)


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
        self._gauges = _ScrapeGauges()
        self.registry.register(self._gauges)

    def _counter(self, name: str) -> Counter:
        spec = _SPECS[name]
        return Counter(name, spec.help, spec.labels, registry=self.registry)

    def _histogram(self, name: str) -> Histogram:
        spec = _SPECS[name]
        return Histogram(name, spec.help, spec.labels, registry=self.registry, buckets=spec.buckets)

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

    def bind_workers(self, busy_fn: BusyProbe, total: int) -> None:
        """Read the busy-worker count from ``busy_fn`` at every scrape; the pool has ``total``."""
        self._gauges.busy = busy_fn
        self._gauges.total = total

    def render(self) -> bytes:
        """The registry in Prometheus text exposition format (what ``/metrics`` serves)."""
        return generate_latest(self.registry)
