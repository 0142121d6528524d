"""A session's limits are held to the service's caps, like the run API's (issue 26)."""

from __future__ import annotations

import httpx
import pytest

from assay import defaults
from assay.sessions import SessionManager

SMALL = {"memory_mb": 128, "processes": 32, "disk_mb": 32, "cpu_s": 60}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("memory_mb", 65536),  # /v1/run refuses memory over the service's cap (2048 here)
        ("disk_mb", 16384),
        ("processes", 5000),
        ("cpu_s", 7200),
        ("output_bytes", 1 << 30),
        ("step_memory_mb", 65536),
        ("step_cpu_s", 61),  # more than the session's own cpu_s
    ],
)
def test_a_limit_over_the_service_cap_is_a_422_naming_it(
    client: httpx.Client, field: str, value: int
) -> None:
    r = client.post("/v1/sessions", json={"limits": {**SMALL, field: value}})
    assert r.status_code == 422, r.text
    assert r.json()["field"] == f"limits.{field}", r.json()


def test_the_documented_longest_ttl_is_accepted(client: httpx.Client) -> None:
    # The docs allow ttl_s up to 4 h; 14400 was refused (the sandbox's wall backstop was
    # ttl_s + 5, over a run's 4 h bound).
    r = client.post("/v1/sessions", json={"limits": SMALL, "ttl_s": 14400, "idle_ttl_s": 14400})
    assert r.status_code == 200, r.text
    assert r.json()["ttl_s"] == 14400
    assert client.delete(f"/v1/sessions/{r.json()['id']}").status_code == 204
    over = client.post("/v1/sessions", json={"limits": SMALL, "ttl_s": 14401})
    assert over.status_code == 422 and over.json()["field"] == "ttl_s", over.text


def test_the_session_memory_budget_defaults_to_what_the_host_has(
    runner: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.sessions import manager
    from assay.sessions.manager import host_memory_mb

    host = host_memory_mb()
    assert host is not None  # /proc/meminfo is readable on Linux
    # MemAvailable moves while other tests run: the manager reads it once, pinned here.
    monkeypatch.setattr(manager, "host_memory_mb", lambda: host)
    m = SessionManager(runner)
    assert m.memory_budget_mb == manager.default_memory_budget_mb()
    # Before: None (unbounded; 256 sessions x 512 MiB were accepted on a 24 GiB host).
    assert m.memory_budget_mb is not None
    assert m.memory_budget_mb <= max(512, host * defaults.SESSION_MEMORY_SHARE)
