"""Prometheus metrics: names, labels, units, scrape-time gauges, separate registries."""

from __future__ import annotations

import re
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from assay.telemetry import (
    METRICS,
    Metrics,
    NodeCapacity,
    SessionStats,
    metric_names,
    metrics_markdown,
    node_name,
)
from assay.telemetry.metrics import SESSION_END_REASONS


def samples(metrics: Metrics) -> list[Sample]:
    text = metrics.render().decode()
    return [s for fam in text_string_to_metric_families(text) for s in fam.samples]


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    found = [s.value for s in samples(metrics) if s.name == name and s.labels == labels]
    assert len(found) <= 1
    return found[0] if found else None


def test_every_documented_metric_is_exported_with_its_type_and_help() -> None:
    text = Metrics().render().decode()
    for name, kind, help_text in metric_names():
        assert f"# TYPE {name} {kind}\n" in text
        assert f"# HELP {name} {help_text}\n" in text
    exported = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    documented = {n for n, _, _ in metric_names()}
    # Only prometheus_client's own *_created companions are not in the table.
    assert {e for e in exported if not e.endswith("_created")} == documented


def test_names_follow_prometheus_conventions() -> None:
    for spec in METRICS:
        assert spec.name.startswith("assay_")
        assert spec.name.endswith("_total") == (spec.kind == "counter")
        if spec.kind == "histogram":
            assert spec.name.endswith("_seconds")
        assert not {"job", "job_id", "problem", "problem_id"} & set(spec.labels)


def test_counters_count_by_their_labels() -> None:
    m = Metrics()
    m.submitted("python", n=3)
    m.submitted("cpp")
    m.completed("python", "accepted")
    m.completed("python", "accepted")
    m.completed("python", "deadline")
    m.rejected(4)
    m.cache_hit()
    m.cache_miss()
    m.cache_miss()
    m.retry()
    m.sandbox_error()
    assert value(m, "assay_jobs_submitted_total", language="python") == 3
    assert value(m, "assay_jobs_submitted_total", language="cpp") == 1
    assert value(m, "assay_jobs_completed_total", language="python", verdict="accepted") == 2
    assert value(m, "assay_jobs_completed_total", language="python", verdict="deadline") == 1
    assert value(m, "assay_jobs_rejected_total") == 4
    assert value(m, "assay_cache_hits_total") == 1
    assert value(m, "assay_cache_misses_total") == 2
    assert value(m, "assay_retries_total") == 1
    assert value(m, "assay_sandbox_errors_total") == 1


def test_histograms_observe_seconds_with_fitting_buckets() -> None:
    m = Metrics()
    m.observe_sandbox_start(0.0015)  # a warm fork: between the 1 ms and 2 ms buckets
    m.observe_queue_wait(2.0)
    m.observe_queue_wait(-0.1)  # clock skew between hosts: counted as no wait
    m.observe_run(0.3)
    start = "assay_sandbox_start_seconds_bucket"
    assert value(m, start, le="0.001") == 0
    assert value(m, start, le="0.002") == 1
    assert value(m, "assay_sandbox_start_seconds_count") == 1
    assert value(m, "assay_queue_wait_seconds_count") == 2
    assert value(m, "assay_queue_wait_seconds_sum") == 2.0
    assert value(m, "assay_job_run_seconds_bucket", le="0.25") == 0
    assert value(m, "assay_job_run_seconds_bucket", le="0.5") == 1


def test_gauges_call_the_bound_functions_at_scrape_time() -> None:
    m = Metrics()
    assert value(m, "assay_queue_depth") is None  # nothing bound: no made-up zeros
    state = {"depth": 5, "age": 1.25, "busy": 2, "calls": 0}

    def queue() -> tuple[int, float]:
        state["calls"] += 1
        return int(state["depth"]), float(state["age"])

    m.bind_queue(queue)
    m.bind_workers(lambda: int(state["busy"]), total=8)
    assert value(m, "assay_queue_depth") == 5
    assert value(m, "assay_queue_oldest_age_seconds") == 1.25
    assert value(m, "assay_workers_busy") == 2
    assert value(m, "assay_workers") == 8
    calls = state["calls"]
    state.update(depth=0, age=0.0, busy=7)
    m.render()
    assert state["calls"] == calls + 1  # one probe call per scrape: depth and age agree
    assert value(m, "assay_queue_depth") == 0
    assert value(m, "assay_workers_busy") == 7


def test_a_failing_probe_does_not_break_the_scrape(caplog: pytest.LogCaptureFixture) -> None:
    m = Metrics()
    m.submitted("python")

    def broken() -> tuple[int, float]:
        raise RuntimeError("queue went away")

    m.bind_queue(broken)
    m.bind_workers(lambda: 3, total=4)
    assert value(m, "assay_queue_depth") is None
    assert value(m, "assay_workers_busy") == 3
    assert value(m, "assay_jobs_submitted_total", language="python") == 1
    assert "queue probe failed" in caplog.text


def test_each_instance_has_its_own_registry_unless_given_one() -> None:
    a, b = Metrics(), Metrics()
    a.retry()
    assert value(a, "assay_retries_total") == 1
    assert value(b, "assay_retries_total") == 0
    shared = CollectorRegistry()
    m = Metrics(shared)
    assert m.registry is shared
    with pytest.raises(ValueError, match="Duplicated"):
        Metrics(shared)  # two executors on one registry would double-register


def test_markdown_table_lists_every_metric() -> None:
    table = metrics_markdown()
    assert table.count("\n") == len(METRICS) + 2
    for name, kind, _ in metric_names():
        assert f"| `{name}` | {kind} |" in table
    assert "`language`, `verdict`" in table


def test_session_gauges_come_from_the_bound_probe_and_events_count() -> None:
    m = Metrics()
    assert value(m, "assay_sessions_open") is None  # no manager: no sample, not a false 0
    stats = SessionStats(
        open=3,
        busy=1,
        max_sessions=8,
        memory_limit_bytes=3 << 29,
        oldest_age_s=42.5,
        past_ttl=1,
        ending=2,
        steps=17,
    )
    m.bind_sessions(lambda: stats)
    m.session_created()
    m.session_rejected()
    m.session_ended("idle_ttl", 30.0)
    assert value(m, "assay_sessions_open") == 3
    assert value(m, "assay_sessions_busy") == 1
    assert value(m, "assay_sessions_max") == 8
    assert value(m, "assay_sessions_memory_limit_bytes") == 3 << 29
    assert value(m, "assay_sessions_oldest_age_seconds") == 42.5
    assert value(m, "assay_sessions_past_ttl") == 1
    assert value(m, "assay_sessions_ending") == 2
    assert value(m, "assay_session_steps_total") == 17
    assert value(m, "assay_sessions_created_total") == 1
    assert value(m, "assay_sessions_rejected_total") == 1
    assert value(m, "assay_sessions_ended_total", reason="idle_ttl") == 1
    assert value(m, "assay_sessions_ended_total", reason="closed") == 0  # present from the start
    assert value(m, "assay_session_lifetime_seconds_bucket", le="30.0") == 1
    assert value(m, "assay_session_lifetime_seconds_bucket", le="10.0") == 0


def test_session_end_reasons_match_the_session_layer() -> None:
    from typing import get_args

    from assay.sessions.types import EndReason

    assert set(SESSION_END_REASONS) == set(get_args(EndReason))


def test_node_capacity_has_one_series_per_node() -> None:
    m = Metrics()
    m.bind_workers(lambda: 3, 4, lambda: (1000, 256))  # the local pool: one node
    local = node_name()
    assert value(m, "assay_node_slots", node=local) == 4
    assert value(m, "assay_node_slots_busy", node=local) == 3
    assert value(m, "assay_node_memory_budget_bytes", node=local) == 1000 << 20
    assert value(m, "assay_node_memory_reserved_bytes", node=local) == 256 << 20
    assert value(m, "assay_node_up", node=local) == 1
    m.bind_nodes(  # as a cluster executor does: one entry per node it feeds
        lambda: [NodeCapacity("a", 16, 16, 1 << 34, 1 << 33), NodeCapacity("b", 16, 0, 0, 0, False)]
    )
    assert value(m, "assay_node_slots_busy", node="a") == 16
    assert value(m, "assay_node_up", node="b") == 0
    assert value(m, "assay_node_slots", node=local) is None
    cluster = Metrics()
    cluster.bind_workers(lambda: 20, 64)  # a cluster's workers, no memory probe: not one node
    assert value(cluster, "assay_workers") == 64
    assert [s for s in samples(cluster) if s.name.startswith("assay_node_")] == []


def test_node_name_defaults_to_the_host_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    monkeypatch.delenv("ASSAY_NODE_NAME", raising=False)
    assert node_name() == socket.gethostname()
    monkeypatch.setenv("ASSAY_NODE_NAME", "gke-pool-1-abc")
    assert node_name() == "gke-pool-1-abc"


def test_failing_session_and_node_probes_lose_only_their_samples(
    caplog: pytest.LogCaptureFixture,
) -> None:
    m = Metrics()

    def broken() -> Any:
        raise RuntimeError("boom")

    m.bind_sessions(broken)
    m.bind_nodes(broken)
    m.retry()
    assert value(m, "assay_retries_total") == 1
    assert value(m, "assay_sessions_open") is None
    assert "sessions probe failed" in caplog.text and "nodes probe failed" in caplog.text
