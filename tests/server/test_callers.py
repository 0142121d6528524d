"""The service starts one caller's sessions one at a time (``_callers``): a tenant flooding
creates and forks holds at most one sandbox start's CPU, its other starts wait (none is
refused), and another caller's start does not wait behind them."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from server_helpers import Live

from assay import defaults
from assay.sessions import SessionManager

SMALL = {"memory_mb": 128, "processes": 32, "disk_mb": 32, "cpu_s": 60}


def test_one_callers_creates_start_one_at_a_time_and_none_is_refused(
    server: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert defaults.SERVER_SESSION_STARTS_PER_CALLER == 1
    lock = threading.Lock()
    now: dict[str, int] = {}
    most: dict[str, int] = {}
    create = SessionManager.create

    def counted(self: SessionManager, **kwargs: Any) -> Any:
        caller = str(kwargs.get("caller"))
        with lock:
            now[caller] = now.get(caller, 0) + 1
            most[caller] = max(most.get(caller, 0), now[caller])
            both = sum(1 for n in now.values() if n)
            most["both"] = max(most.get("both", 0), both)
        try:
            time.sleep(0.2)  # widen the window two starts would share
            return create(self, **kwargs)
        finally:
            with lock:
                now[caller] -= 1

    monkeypatch.setattr(SessionManager, "create", counted)

    def make(caller: str) -> str:
        with server.client() as c:
            r = c.post("/v1/sessions", json={"limits": SMALL, "caller": caller})
            assert r.status_code == 200, r.text
            sid = str(r.json()["id"])
            assert c.delete(f"/v1/sessions/{sid}").status_code == 204
            return sid

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(make, ["flood"] * 5 + ["other"] * 2))
    assert len(set(ids)) == 7
    assert most["flood"] == 1 and most["other"] == 1
    assert most["both"] == 2  # the other caller started beside the flood, not after it
