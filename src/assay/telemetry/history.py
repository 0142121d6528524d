"""A short in-memory history of an executor's metrics, for the built-in dashboard.

Prometheus keeps the long history; the dashboard of ``assay serve`` must work without one. So
the service samples its own registry every few seconds into a bounded ring, and
:meth:`MetricsHistory.series` turns counters into rates and histograms into percentiles, the
same arithmetic ``rate()`` and ``histogram_quantile()`` do.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric

__all__ = ["MetricsHistory", "Snapshot", "delta", "quantile", "snapshot"]

#: Samples kept: one every 2 s for an hour.
DEFAULT_KEEP = 1800
#: Percentiles are computed over this many sample intervals (30 s at 2 s), so a quiet moment
#: does not make the latency line jump to zero and back.
PERCENTILE_WINDOW = 15


@dataclass(slots=True)
class Snapshot:
    """The dashboard's metrics at one moment (counters as totals, histograms cumulative)."""

    t: float
    completed: dict[str, float] = field(default_factory=dict)  # by verdict
    gauges: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    run_buckets: list[tuple[float, float]] = field(default_factory=list)
    wait_buckets: list[tuple[float, float]] = field(default_factory=list)
    nodes: dict[str, dict[str, float]] = field(default_factory=dict)  # node -> gauge -> value


_GAUGES = (
    "assay_queue_depth",
    "assay_queue_oldest_age_seconds",
    "assay_workers_busy",
    "assay_workers",
    "assay_records_spooled",
    "assay_sessions_open",
    "assay_sessions_busy",
    "assay_sessions_max",
    "assay_sessions_oldest_age_seconds",
    "assay_sessions_past_ttl",
)
_COUNTERS = (
    "assay_sandbox_errors_total",
    "assay_jobs_rejected_total",
    "assay_records_uploaded_total",
    "assay_records_upload_errors_total",
    "assay_session_steps_total",
    "assay_sessions_created_total",
    "assay_sessions_rejected_total",
)


def snapshot(families: Iterable[Metric], now: float | None = None) -> Snapshot:
    """Read the metrics the dashboard draws from metric families: ``registry.collect()`` of a
    local registry, or the parsed ``/metrics`` text of a remote service (``assay top``)."""
    snap = Snapshot(time.time() if now is None else now)
    run: dict[float, float] = collections.defaultdict(float)
    wait: dict[float, float] = collections.defaultdict(float)
    for family in families:
        for s in family.samples:
            if s.name == "assay_jobs_completed_total":
                verdict = s.labels.get("verdict", "")
                snap.completed[verdict] = snap.completed.get(verdict, 0.0) + s.value
            elif s.name in _GAUGES:
                snap.gauges[s.name] = snap.gauges.get(s.name, 0.0) + s.value
            elif s.name in _COUNTERS:
                snap.counters[s.name] = snap.counters.get(s.name, 0.0) + s.value
            elif s.name.startswith("assay_node_") and "node" in s.labels:
                snap.nodes.setdefault(s.labels["node"], {})[s.name] = s.value
            elif s.name == "assay_job_run_seconds_bucket":
                run[float(s.labels["le"])] += s.value
            elif s.name == "assay_queue_wait_seconds_bucket":
                wait[float(s.labels["le"])] += s.value
    snap.run_buckets = sorted(run.items())
    snap.wait_buckets = sorted(wait.items())
    return snap


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """``histogram_quantile``: the ``q`` quantile of cumulative ``(le, count)`` buckets.

    Linear interpolation inside the bucket; the ``+Inf`` bucket answers the last finite
    bound. ``None`` when the histogram is empty.
    """
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if math.isinf(le):
                return prev_le
            if count == prev_count:
                return le
            return prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count)
        prev_le, prev_count = le, count
    return prev_le


def delta(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    before = dict(a)
    return [(le, max(0.0, count - before.get(le, 0.0))) for le, count in b]


class MetricsHistory:
    """A ring of :class:`Snapshot` of one registry; :meth:`sample` adds one (thread-safe)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        keep: int = DEFAULT_KEEP,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.registry = registry
        self._clock = clock
        self._ring: collections.deque[Snapshot] = collections.deque(maxlen=keep)
        self._lock = threading.Lock()

    def sample(self) -> Snapshot:
        snap = snapshot(self.registry.collect(), self._clock())
        with self._lock:
            self._ring.append(snap)
        return snap

    def snapshots(self) -> list[Snapshot]:
        with self._lock:
            return list(self._ring)

    def series(self) -> dict[str, Any]:
        """Per-interval values for the charts, one entry per sample after the first.

        ``throughput`` and ``verdicts`` are jobs per second, ``session_steps``,
        ``sessions_created`` and ``sessions_rejected`` events per second; ``latency`` holds p50/p95/p99 of
        job run time and p95 of queue wait over the last :data:`PERCENTILE_WINDOW` intervals;
        gauges are as sampled.
        """
        snaps = self.snapshots()
        verdicts = sorted({v for s in snaps for v in s.completed})
        out: dict[str, Any] = {
            "t": [],
            "throughput": [],
            "sandbox_errors": [],
            "rejected": [],
            "verdicts": {v: [] for v in verdicts},
            "latency": {"p50": [], "p95": [], "p99": [], "queue_wait_p95": []},
            "gauges": {g: [] for g in _GAUGES},
            "records_uploaded": [],
            "session_steps": [],
            "sessions_created": [],
            "sessions_rejected": [],
        }
        for i in range(1, len(snaps)):
            prev, cur = snaps[i - 1], snaps[i]
            dt = max(cur.t - prev.t, 1e-6)
            out["t"].append(cur.t)
            done = sum(cur.completed.values()) - sum(prev.completed.values())
            out["throughput"].append(max(0.0, done) / dt)
            for v in verdicts:
                rate = (cur.completed.get(v, 0.0) - prev.completed.get(v, 0.0)) / dt
                out["verdicts"][v].append(max(0.0, rate))
            for key, name in (
                ("sandbox_errors", "assay_sandbox_errors_total"),
                ("rejected", "assay_jobs_rejected_total"),
                ("records_uploaded", "assay_records_uploaded_total"),
                ("session_steps", "assay_session_steps_total"),
                ("sessions_created", "assay_sessions_created_total"),
                ("sessions_rejected", "assay_sessions_rejected_total"),
            ):
                d = cur.counters.get(name, 0.0) - prev.counters.get(name, 0.0)
                out[key].append(max(0.0, d) / dt)
            base = snaps[max(0, i - PERCENTILE_WINDOW)]
            run = delta(base.run_buckets, cur.run_buckets)
            wait = delta(base.wait_buckets, cur.wait_buckets)
            for key, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
                out["latency"][key].append(quantile(q, run))
            out["latency"]["queue_wait_p95"].append(quantile(0.95, wait))
            for g in _GAUGES:
                out["gauges"][g].append(cur.gauges.get(g))
        last = snaps[-1] if snaps else None
        out["totals"] = {
            "jobs": sum(last.completed.values()) if last else 0.0,
            "verdicts": dict(last.completed) if last else {},
            "sandbox_errors": last.counters.get("assay_sandbox_errors_total", 0.0) if last else 0,
            "sessions_available": bool(last and "assay_sessions_open" in last.gauges),
        }
        return out
