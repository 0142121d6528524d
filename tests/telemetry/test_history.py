"""The dashboard's metrics history: rates from counters, percentiles from histogram buckets."""

from __future__ import annotations

import math

import pytest

from assay.telemetry import Metrics, SessionStats
from assay.telemetry.history import MetricsHistory, quantile


def test_quantile_interpolates_like_histogram_quantile() -> None:
    buckets = [(0.1, 10.0), (0.5, 30.0), (1.0, 40.0), (math.inf, 40.0)]
    assert quantile(0.25, buckets) == pytest.approx(0.1)  # rank 10: the top of bucket one
    assert quantile(0.5, buckets) == pytest.approx(0.3)  # rank 20: halfway through (0.1, 0.5]
    assert quantile(0.99, buckets) == pytest.approx(0.5 + 0.5 * (39.6 - 30) / 10)
    assert quantile(0.5, [(0.1, 0.0), (math.inf, 0.0)]) is None
    assert quantile(0.9, [(1.0, 0.0), (math.inf, 5.0)]) == 1.0  # all past the last bound


def test_series_turns_counters_into_rates_and_buckets_into_percentiles() -> None:
    metrics = Metrics()
    now = [1000.0]
    history = MetricsHistory(metrics.registry, clock=lambda: now[0])
    history.sample()
    for _ in range(6):
        metrics.completed("python", "accepted")
        metrics.observe_run(0.3)
    for _ in range(2):
        metrics.completed("cpp", "wrong_answer")
        metrics.observe_run(3.0)
    metrics.sandbox_error()
    metrics.bind_queue(lambda: (7, 12.5))
    now[0] += 2.0
    history.sample()
    s = history.series()
    assert s["t"] == [1002.0]
    assert s["throughput"] == [pytest.approx(4.0)]  # 8 jobs in 2 s
    assert s["verdicts"] == {"accepted": [3.0], "wrong_answer": [1.0]}
    assert s["sandbox_errors"] == [0.5]
    assert 0.25 < s["latency"]["p50"][0] <= 0.5 and 2.0 < s["latency"]["p99"][0] <= 5.0
    assert s["gauges"]["assay_queue_depth"] == [7.0]
    assert s["gauges"]["assay_queue_oldest_age_seconds"] == [12.5]
    assert s["totals"]["jobs"] == 8.0 and s["totals"]["sessions_available"] is False


def test_series_has_the_sessions_of_a_bound_manager() -> None:
    metrics = Metrics()
    now = [1000.0]
    history = MetricsHistory(metrics.registry, clock=lambda: now[0])
    stats = {"steps": 0, "open": 0}

    def probe() -> SessionStats:
        return SessionStats(stats["open"], 1, 64, 0, 30.0, 0, 0, stats["steps"])

    metrics.bind_sessions(probe)
    history.sample()
    stats.update(steps=10, open=5)
    metrics.session_created()
    metrics.session_rejected()
    now[0] += 2.0
    history.sample()
    s = history.series()
    assert s["totals"]["sessions_available"] is True
    assert s["gauges"]["assay_sessions_open"] == [5.0]
    assert s["gauges"]["assay_sessions_max"] == [64.0]
    assert s["gauges"]["assay_sessions_oldest_age_seconds"] == [30.0]
    assert s["session_steps"] == [5.0]  # 10 steps in 2 s
    assert s["sessions_created"] == [0.5] and s["sessions_rejected"] == [0.5]
