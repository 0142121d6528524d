"""SessionManager: sessions by id, the cap on open sessions and memory, why ended ones ended."""

from __future__ import annotations

import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from assay import Overloaded
from assay.errors import ValidationError
from assay.sessions import SessionEnded, SessionLimits, SessionManager, TooManySessions, _reaper
from assay.sessions import manager as manager_module
from assay.sessions.manager import LEAK_GRACE_S, UnknownSession
from assay.telemetry import Metrics

SMALL = SessionLimits(memory_mb=64, processes=16, disk_mb=16)


def test_cap_on_open_sessions(runner) -> None:  # type: ignore[no-untyped-def]
    m = SessionManager(runner, max_sessions=2)
    a = m.create(limits=SMALL)
    b = m.create(limits=SMALL)
    try:
        with pytest.raises(TooManySessions, match="sessions 2 of 2") as info:
            m.create(limits=SMALL)
        assert isinstance(info.value, Overloaded) and info.value.retry_after > 0
        a.close()
        c = m.create(limits=SMALL)  # a closed session frees its place
        assert {s.id for s in m.sessions()} == {b.id, c.id}
    finally:
        m.close_all()
    assert m.sessions() == []


def test_memory_budget(runner) -> None:  # type: ignore[no-untyped-def]
    m = SessionManager(runner, memory_budget_mb=100)
    try:
        m.create(limits=SMALL)
        with pytest.raises(TooManySessions, match="memory MiB 64 of 100"):
            m.create(limits=SMALL)
    finally:
        m.close_all()


def test_get_fork_close_and_ended_reasons(runner) -> None:  # type: ignore[no-untyped-def]
    m = SessionManager(runner)
    s = m.create(limits=SMALL, files={"a": "1"})
    assert m.get(s.id) is s
    child = m.fork(s.id)
    assert child.read_file("a") == b"1"
    assert len(m.sessions()) == 2
    m.close(s.id)
    with pytest.raises(SessionEnded, match="closed"):
        m.get(s.id)
    with pytest.raises(UnknownSession):
        m.get("nope")
    m.close_all()
    with pytest.raises(SessionEnded):
        m.get(child.id)


def test_bad_cap(runner) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValidationError, match="max_sessions"):
        SessionManager(runner, max_sessions=0)


def _metric(metrics: Metrics, name: str, **labels: str) -> float | None:
    text = metrics.render().decode()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None


def test_metrics_of_open_busy_ended_and_refused_sessions(runner) -> None:  # type: ignore[no-untyped-def]
    metrics = Metrics()
    m = SessionManager(runner, max_sessions=2, metrics=metrics)
    try:
        a = m.create(limits=SMALL)
        b = m.create(limits=SMALL)
        with pytest.raises(TooManySessions):
            m.create(limits=SMALL)
        a.exec("true")
        a.exec("true")
        b.exec("true")
        assert _metric(metrics, "assay_sessions_open") == 2
        assert _metric(metrics, "assay_sessions_max") == 2
        assert _metric(metrics, "assay_sessions_memory_limit_bytes") == 2 * 64 << 20
        assert _metric(metrics, "assay_sessions_created_total") == 2
        assert _metric(metrics, "assay_sessions_rejected_total") == 1
        assert _metric(metrics, "assay_session_steps_total") == 3
        assert (_metric(metrics, "assay_sessions_oldest_age_seconds") or 0) > 0
        started = threading.Event()
        busy = threading.Thread(target=lambda: (started.set(), b.exec("sleep 1")))
        busy.start()
        started.wait()
        deadline = time.monotonic() + 5
        while _metric(metrics, "assay_sessions_busy") != 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _metric(metrics, "assay_sessions_busy") == 1
        busy.join()
        a.close()
        assert _metric(metrics, "assay_sessions_open") == 1
        assert _metric(metrics, "assay_sessions_ended_total", reason="closed") == 1
        assert _metric(metrics, "assay_session_lifetime_seconds_count") == 1
        assert _metric(metrics, "assay_session_steps_total") == 4  # ended sessions' steps stay
        assert _metric(metrics, "assay_sessions_past_ttl") == 0
        assert _metric(metrics, "assay_sessions_ending") == 0  # close returns after teardown
    finally:
        m.close_all()
    assert _metric(metrics, "assay_sessions_open") == 0
    assert _metric(metrics, "assay_sessions_oldest_age_seconds") == 0


def test_a_manager_on_an_executor_exports_to_its_metrics(runner) -> None:  # type: ignore[no-untyped-def]
    from assay import LocalExecutor

    with LocalExecutor(runner=runner, slots=1) as ex:
        m = SessionManager(ex)
        assert m.metrics is ex.metrics
        s = m.create(limits=SMALL)
        assert _metric(ex.metrics, "assay_sessions_open") == 1
        s.close()
        assert _metric(ex.metrics, "assay_sessions_open") == 0


@pytest.mark.slow
def test_a_session_the_reaper_misses_counts_as_past_its_ttl(  # type: ignore[no-untyped-def]
    runner, monkeypatch
) -> None:
    """The fault injected for real: the reaper stops ending sessions (its test always says
    not yet), so a session outlives its TTL until the sandbox's wall backstop (TTL + 5 s)
    ends its run; in between, the gauge the AssaySessionsPastTTL alert reads says 1."""
    monkeypatch.setattr(_reaper, "due", lambda session, now: None)
    metrics = Metrics()
    m = SessionManager(runner, metrics=metrics)
    s = m.create(limits=SMALL, ttl_s=1.0)
    try:
        time.sleep(1.0 + LEAK_GRACE_S + 0.5)
        assert not s.ended
        assert _metric(metrics, "assay_sessions_past_ttl") == 1
        deadline = time.monotonic() + 15
        while not s.ended and time.monotonic() < deadline:
            time.sleep(0.1)
        assert s.end_reason == "ttl"  # the backstop: the run's wall limit
        assert _metric(metrics, "assay_sessions_past_ttl") == 0
        assert _metric(metrics, "assay_sessions_ended_total", reason="ttl") == 1
    finally:
        m.close_all()


def test_a_session_not_torn_down_counts_as_past_its_ttl(runner, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """An ended session whose sandbox run has not returned (a teardown that hangs) is
    counted as ending, and past its TTL once it has hung longer than the grace."""
    metrics = Metrics()
    m = SessionManager(runner, metrics=metrics)
    s = m.create(limits=SMALL)
    s.close()
    monkeypatch.setattr(s, "result", None)  # as if its sandbox run were still ending
    m._forget(s)  # the end callback again, now seeing an unfinished teardown
    assert _metric(metrics, "assay_sessions_ending") == 1
    assert _metric(metrics, "assay_sessions_past_ttl") == 0
    monkeypatch.setattr(manager_module, "LEAK_GRACE_S", 0.0)
    assert _metric(metrics, "assay_sessions_past_ttl") == 1
    monkeypatch.undo()  # the run has returned: no longer ending
    assert _metric(metrics, "assay_sessions_ending") == 0


def test_create_and_end_are_logged_with_the_session_id_and_no_output(  # type: ignore[no-untyped-def]
    runner, caplog
) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="assay.sessions")
    m = SessionManager(runner)
    s = m.create(limits=SMALL)
    s.exec("echo secret-output-1234")
    s.close()
    events = {r.event: r for r in caplog.records if hasattr(r, "event")}  # type: ignore[attr-defined]
    assert events["session_created"].session_id == s.id  # type: ignore[attr-defined]
    ended = events["session_ended"]
    assert (ended.session_id, ended.reason, ended.steps) == (s.id, "closed", 1)  # type: ignore[attr-defined]
    assert ended.levelname == "INFO"
    assert not any("secret-output-1234" in str(vars(r)) for r in caplog.records)


def test_one_callers_flood_of_starts_is_refused_not_queued(runner) -> None:  # type: ignore[no-untyped-def]
    # Issue 26: a flood of creates and forks from one caller took CPU from another's batch;
    # at most SESSION_STARTS_PER_CALLER of one caller's sessions start at once.
    from assay import defaults

    m = SessionManager(runner)
    outcomes: list[str] = []
    lock = threading.Lock()

    def start(caller: str) -> None:
        try:
            m.create(limits=SMALL, caller=caller)
            what = "made"
        except TooManySessions as exc:
            what = "refused" if "starting for 'flood'" in str(exc) else str(exc)
        with lock:
            outcomes.append(f"{caller} {what}")

    flood = [threading.Thread(target=start, args=("flood",)) for _ in range(8)]
    try:
        for t in flood:
            t.start()
        for t in flood:
            t.join(60)
        made = outcomes.count("flood made")
        assert outcomes.count("flood refused") == 8 - made, outcomes
        assert 1 <= made < 8, outcomes  # (at least the first; never all eight at once)
        start("other")  # another caller starts one whatever the flood did
        assert outcomes[-1] == "other made", outcomes
        assert defaults.SESSION_STARTS_PER_CALLER < 8
    finally:
        m.close_all()
