"""``/dashboard``: its data API on a run, the missing-plotly answer, and the page in Chromium."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_helpers import live, memory_executor

from assay.executor import Execution, Job, LocalExecutor, RunJob
from assay.server import Settings, create_app
from assay.server import dashboard as dashboard_module
from assay.types import ExecResult

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"

ADD = {
    "id": "add",
    "tests": [
        {"kind": "stdio", "input": "1 2\n", "expected": "3\n"},
        {"kind": "stdio", "input": "5 5\n", "expected": "10\n"},
    ],
}


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.1)
    return value


def by_code(job: Job) -> Execution:
    """In-memory runs whose verdict is the program's text (``ok`` or ``runtime_error``)."""
    assert isinstance(job, RunJob)
    code = job.code if isinstance(job.code, str) else job.code.decode()
    status = "ok" if code.startswith("ok") else "runtime_error"
    return Execution(status, None, "", result=ExecResult(status, 0, wall_s=0.01))  # type: ignore[arg-type]


def test_dashboard_api_reports_a_run_per_caller_and_batch() -> None:
    ex = memory_executor(by_code, slots=2, cache=False)
    try:
        with live(create_app(ex)) as srv, srv.client() as client:
            for caller, codes in (("trainer-a", ["ok1", "ok2", "bad3"]), ("trainer-b", ["ok4"])):
                for code in codes:
                    r = client.post(
                        "/run_code",
                        json={"code": code, "language": "python"},
                        headers={"x-assay-caller": caller},
                    )
                    assert r.status_code == 200, r.text
            series = wait_for(
                lambda: (
                    (s := client.get("/dashboard/api/series").json())["totals"]["jobs"] == 4 and s
                ),
                "the sampler sees the 4 jobs",
            )
            assert series["totals"]["verdicts"] == {"ok": 3.0, "runtime_error": 1.0}
            assert len(series["t"]) == len(series["throughput"]) >= 1
            assert sum(series["verdicts"]["ok"][i] for i in range(len(series["t"]))) > 0
            callers = {
                c["caller"]: c for c in client.get("/dashboard/api/callers").json()["callers"]
            }
            assert callers["trainer-a"]["jobs"] == 3 and callers["trainer-b"]["jobs"] == 1
            assert callers["trainer-a"]["verdicts"] == {"ok": 2, "runtime_error": 1}
            batches = client.get("/dashboard/api/batches", params={"caller": "trainer-a"}).json()
            assert len(batches["batches"]) == 3  # each /run_code is its own batch
            one = batches["batches"][0]["batch_id"]
            jobs = client.get(f"/dashboard/api/batches/{one}").json()["jobs"]
            assert len(jobs) == 1 and jobs[0]["caller"] == "trainer-a"
            page = client.get("/dashboard")
            assert page.status_code == 200 and "/dashboard/plotly.min.js" in page.text
            js = client.get("/dashboard/plotly.min.js")
            assert js.status_code == 200 and len(js.content) > 1_000_000
    finally:
        ex.close()


def test_dashboard_without_plotly_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dashboard_module, "plotly_js", lambda: None)
    ex = memory_executor(by_code)
    try:
        with live(create_app(ex)) as srv, srv.client() as client:
            r = client.get("/dashboard")
            assert r.status_code == 503 and "assay[dashboard]" in r.json()["message"]
    finally:
        ex.close()


def _run_mixed_load(client: httpx.Client) -> None:
    """Real programs in real sandboxes, two callers: every verdict the charts colour."""
    judged = client.post(
        "/v1/judge",
        json={
            "problem": ADD,
            "submissions": [
                {"code": "print(sum(map(int, input().split())))"},
                {"code": "a, b = map(int, input().split()); print(a + b)"},
                {"code": "print(3)"},
                {"code": "raise SystemExit(1)"},
                {"code": "while True: pass", "problem": {**ADD, "limits": {"time_s": 0.5}}},
            ],
        },
        headers={"x-assay-caller": "trainer-a"},
    )
    assert judged.status_code == 200, judged.text
    for code in ("print('hi')", "x = bytearray(1 << 31)", "import os; os.abort()"):
        r = client.post(
            "/run_code",
            json={"code": code, "language": "python", "memory_limit_MB": 256},
            headers={"x-assay-caller": "trainer-b"},
        )
        assert r.status_code == 200, r.text


@pytest.mark.slow
@pytest.mark.timeout(600)  # real browser/servers on a shared, loaded machine
def test_dashboard_renders_a_run_in_headless_chromium(
    sandbox_executor: LocalExecutor, tmp_path: Path
) -> None:
    from cdp import Browser

    app = create_app(sandbox_executor, settings=Settings(max_time_s=10))
    with live(app) as srv, srv.client() as client:
        before = client.get("/dashboard/api/series").json()["totals"]["jobs"]
        # An agent session stays open through the run: the sessions chart draws it.
        created = client.post("/v1/sessions", json={"limits": {"memory_mb": 64}})
        assert created.status_code == 200, created.text
        session_id = created.json()["id"]
        step = client.post(f"/v1/sessions/{session_id}/exec", json={"command": "echo hi"})
        assert step.status_code == 200 and step.json()["stdout"] == "hi\n", step.text
        _run_mixed_load(client)
        wait_for(
            lambda: client.get("/dashboard/api/series").json()["totals"]["jobs"] >= before + 8,
            "the sampler sees the run",
            timeout=120,
        )
        with Browser(tmp_path / "profile") as browser:
            browser.goto(f"{srv.url}/dashboard")
            rendered = """(() => {
                const ids = ["chart-throughput", "chart-verdicts", "chart-latency",
                             "chart-queue", "chart-errors", "chart-capacity",
                             "chart-sessions"];
                const charts = ids.map((id) => document.getElementById(id));
                if (charts.some((c) => !c || !c.data)) return null;
                const points = (c) => c.data.reduce((n, t) =>
                    n + (t.y || []).filter((v) => v !== null && v > 0).length, 0);
                const svg = (c) => c.querySelectorAll("path.js-line, path.js-fill").length;
                return {
                    throughput: points(charts[0]),
                    verdicts: charts[1].data.map((t) => t.name),
                    latency: points(charts[2]),
                    sessions: charts[6].data.find((t) => t.name === "open").y
                        .filter((v) => v === 1).length,
                    drawn: charts.map(svg),
                    callers: [...document.querySelectorAll("#callers tbody tr")]
                        .map((r) => r.cells[0].textContent),
                };
            })()"""

            def ready() -> Any:
                browser.pump(0.5)
                state = browser.evaluate(rendered)
                if not (state and state["throughput"] > 0 and state["callers"]):
                    return None
                return state if state["sessions"] > 0 else None

            state = wait_for(ready, "the charts draw the run", timeout=120)
            assert {"accepted", "wrong_answer", "time_limit"} <= set(state["verdicts"]), state
            assert state["latency"] > 0, state
            assert all(n > 0 for n in state["drawn"]), state["drawn"]
            assert {"trainer-a", "trainer-b"} <= set(state["callers"])
            # Drill down: click the first batch of trainer-a, its jobs appear.
            browser.evaluate(
                "[...document.querySelectorAll('#callers tbody tr')]"
                ".find((r) => r.cells[0].textContent === 'trainer-a').click()"
            )

            def filtered() -> Any:
                browser.pump(0.5)
                return browser.evaluate(
                    "(() => { const rows = [...document.querySelectorAll('#batches tbody tr')];"
                    " return rows.length > 0 && rows.every((r) => r.cells.length > 1"
                    " && r.cells[1].textContent === 'trainer-a'); })()"
                )

            wait_for(filtered, "the batches of trainer-a alone are listed", timeout=120)
            browser.evaluate("document.querySelector('#batches tbody tr').click()")

            def jobs() -> Any:
                browser.pump(0.5)
                n = browser.evaluate("document.querySelectorAll('#jobs tbody tr').length")
                return n == 5

            wait_for(jobs, "the batch's 5 jobs are listed", timeout=120)
            browser.pump(1.0)
            shot = ARTIFACTS / "dashboard.png"
            browser.screenshot(shot)
            assert shot.stat().st_size > 20_000
            if os.environ.get("ASSAY_UPDATE_SCREENSHOT"):
                shutil.copyfile(shot, REPO / "docs" / "images" / "dashboard.png")
            assert browser.errors == [], browser.errors
            foreign = [u for u in browser.requests if not u.startswith((srv.url, "data:"))]
            assert foreign == [], "the page fetched from outside the service"
        assert client.delete(f"/v1/sessions/{session_id}").status_code == 204
