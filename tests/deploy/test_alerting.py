"""A real Prometheus scrapes a real ``assay serve`` and fires an alert when the test breaks S3,
and another when the test fills the service's session cap.

The service records to moto's S3 server (see ``tests/s3_helpers.py``); the test stops that
server, sends more work, and waits for ``AssayRecordsNotUploading`` to fire. Prometheus loads
the shipped rules with every duration divided by 30 (``10m`` becomes ``20s``): the same
expressions on a compressed clock, so the test takes a minute instead of twenty.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from test_grafana import expressions, grafana_to_promql

from s3_helpers import S3Server, free_port, s3_server

pytest.importorskip("s3fs", reason="s3fs is not installed (pip install 'assay[s3]')")

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "assay-rules.yml"
SCALE = 30
_UNITS = {"s": 1, "m": 60, "h": 3600}


def compress(text: str) -> str:
    """Every Prometheus duration in ``text`` divided by :data:`SCALE` (at least 1 s)."""

    def scaled(m: re.Match[str]) -> str:
        seconds = int(m.group(2)) * _UNITS[m.group(3)]
        return f"{m.group(1)}{max(1, seconds // SCALE)}s"

    return re.sub(r"(\[|offset |for: |interval: )(\d+)([smh])\b", scaled, text)


def wait_for(check: Callable[[], Any], what: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting until {what}")
        time.sleep(0.5)


@pytest.fixture
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


@pytest.fixture
def service(s3: S3Server, tmp_path: Path) -> Iterator[str]:
    """``assay serve`` in its own process, recording to the S3 server; its base URL."""
    port = free_port()
    env = {
        **os.environ,
        **s3.env(),
        "HOME": str(tmp_path / "home"),  # spool under tmp
        "ASSAY_SERVER_MAX_SESSIONS": "2",  # a cap the session test can fill
    }
    url = f"s3://assay-{uuid.uuid4().hex[:12]}/records"
    log = (tmp_path / "serve.log").open("wb")
    argv = ["serve", "--port", str(port), "--workers", "2", "--records", url]
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.cli", *argv],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(base, proc), "assay serve is ready", 60)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _ready(base: str, proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"assay serve exited with {proc.returncode}")
    try:
        return httpx.get(f"{base}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def prometheus(service: str, tmp_path: Path) -> Iterator[str]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus not found: install Debian's 'prometheus' package (make apt)")
    (tmp_path / "rules.yml").write_text(compress(RULES.read_text()))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp_path / "rules.yml")],
        "scrape_configs": [
            {"job_name": "assay", "static_configs": [{"targets": [service[len("http://") :]]}]}
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _prom_ready(base, proc), "Prometheus is ready", 60)
        yield base
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def _prom_ready(base: str, proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"prometheus exited with {proc.returncode}")
    try:
        return httpx.get(f"{base}/-/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def query(prom: str, expr: str) -> float | None:
    body = httpx.get(f"{prom}/api/v1/query", params={"query": expr}, timeout=10).json()
    result = body["data"]["result"]
    return float(result[0]["value"][1]) if result else None


def alert_states(prom: str) -> dict[str, str]:
    body = httpx.get(f"{prom}/api/v1/alerts", timeout=10).json()
    return {a["labels"]["alertname"]: a["state"] for a in body["data"]["alerts"]}


def run_jobs(service: str, n: int) -> None:
    with httpx.Client(base_url=service, timeout=60) as client:
        for i in range(n):
            r = client.post("/run_code", json={"code": f"print({i})", "language": "python"})
            assert r.status_code == 200 and r.json()["status"] == "Success", r.text


@pytest.mark.slow
@pytest.mark.timeout(600)  # real browser/servers on a shared, loaded machine
def test_prometheus_fires_records_not_uploading_when_s3_goes_down(
    s3: S3Server, service: str, prometheus: str
) -> None:
    rules = yaml.safe_load(httpx.get(f"{prometheus}/api/v1/rules", timeout=10).text)
    loaded = {r["name"] for g in rules["data"]["groups"] for r in g["rules"]}
    assert {"AssayRecordsNotUploading", "AssaySandboxErrorRatioHigh"} <= loaded
    # Healthy: jobs run, their records are uploaded, Prometheus sees it, nothing fires.
    run_jobs(service, 4)
    wait_for(
        lambda: (query(prometheus, "assay_records_uploaded_total") or 0) >= 4,
        "Prometheus sees the 4 records uploaded",
        60,
    )
    assert query(prometheus, 'up{job="assay"}') == 1.0
    assert "firing" not in alert_states(prometheus).values(), alert_states(prometheus)
    # The fault: the object store goes away; new records can only be spooled.
    s3.stop()
    run_jobs(service, 3)
    wait_for(
        lambda: alert_states(prometheus).get("AssayRecordsNotUploading") == "firing",
        "AssayRecordsNotUploading fires",
        120,
    )
    assert query(prometheus, "assay_records_spooled") == 3.0
    assert (query(prometheus, "assay_records_upload_errors_total") or 0) >= 1
    firing = {k for k, v in alert_states(prometheus).items() if v == "firing"}
    assert firing == {"AssayRecordsNotUploading"}
    # The Grafana dashboard's queries are valid PromQL over what this service exports.
    for expr in expressions():
        body = httpx.get(
            f"{prometheus}/api/v1/query", params={"query": grafana_to_promql(expr)}, timeout=10
        ).json()
        assert body["status"] == "success", (expr, body)


@pytest.mark.slow
@pytest.mark.timeout(600)  # real servers on a shared, loaded machine
def test_prometheus_fires_sessions_at_capacity_when_the_cap_is_full(
    service: str, prometheus: str
) -> None:
    """The fault: agents hold every session the service allows (cap 2) and a third is
    refused; the session series reach Prometheus and AssaySessionsAtCapacity fires."""
    with httpx.Client(base_url=service, timeout=60) as client:
        ids = []
        for _ in range(2):
            r = client.post("/v1/sessions", json={"limits": {"memory_mb": 64}})
            assert r.status_code == 200, r.text
            ids.append(r.json()["id"])
        assert client.post(f"/v1/sessions/{ids[0]}/exec", json={"command": "true"}).is_success
        refused = client.post("/v1/sessions", json={})
        assert refused.status_code == 429 and "Retry-After" in refused.headers
        wait_for(
            lambda: alert_states(prometheus).get("AssaySessionsAtCapacity") == "firing",
            "AssaySessionsAtCapacity fires",
            120,
        )
        assert query(prometheus, "assay_sessions_open") == 2.0
        assert query(prometheus, "assay_sessions_max") == 2.0
        assert query(prometheus, "assay_sessions_rejected_total") == 1.0
        assert query(prometheus, "assay_session_steps_total") == 1.0
        assert query(prometheus, "assay_sessions_past_ttl") == 0.0
        assert query(prometheus, "sum(assay_node_slots)") == 2.0  # --workers 2, one node
        firing = {k for k, v in alert_states(prometheus).items() if v == "firing"}
        assert firing == {"AssaySessionsAtCapacity"}, firing
        for sid in ids:
            assert client.delete(f"/v1/sessions/{sid}").status_code == 204
    wait_for(
        lambda: query(prometheus, 'assay_sessions_ended_total{reason="closed"}') == 2.0,
        "Prometheus sees both sessions closed",
        60,
    )
    assert query(prometheus, "assay_sessions_open") == 0.0
