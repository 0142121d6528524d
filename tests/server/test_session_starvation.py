"""Sleeping session steps cannot starve another caller's plain run (issue 26): more
sleepers than slots once held every executor slot and every thread of the event loop's
default pool, and a ``print(42)`` waited 22 s for them."""

from __future__ import annotations

import threading
import time

import pytest
from server_helpers import Live

SMALL = {"memory_mb": 128, "processes": 32, "disk_mb": 32, "cpu_s": 60}


@pytest.mark.slow
def test_a_plain_run_is_prompt_beside_more_sleeping_steps_than_slots(server: Live) -> None:
    with server.client() as c:
        sids = []
        for i in range(10):  # slots=2; the loop's default pool has min(32, CPUs + 4)
            r = c.post("/v1/sessions", json={"limits": SMALL, "caller": f"sleepy{i % 2}"})
            assert r.status_code == 200, r.text
            sids.append(r.json()["id"])

        def sleep(sid: str) -> None:
            with server.client() as own:  # (its timeout: 60 s)
                own.post(f"/v1/sessions/{sid}/exec", json={"command": "sleep 12"})

        threads = [threading.Thread(target=sleep, args=(sid,)) for sid in sids]
        try:
            for t in threads:
                t.start()
            time.sleep(1.5)  # every sleeper is running or queued
            started = time.monotonic()
            r = c.post("/v1/run", json={"code": "print(42)"}, timeout=60)
            took = time.monotonic() - started
            assert r.status_code == 200 and r.json()["stdout"] == "42\n", r.text
            assert took < 5.0, f"print(42) took {took:.1f} s beside sleeping steps"
        finally:
            for sid in sids:
                c.delete(f"/v1/sessions/{sid}")
            for t in threads:
                t.join(60)
