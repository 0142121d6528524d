"""Soak: ``assay serve`` under a mixed load for a fixed time while its object store goes away.

What it runs, all real and all on loopback:

* moto's S3 server (``moto[server]``, in this process): the records target. It is stopped at
  ``--s3-down`` of the run and started again at ``--s3-up``.
* ``assay serve --records s3://...`` in its own process (spool and state under a temporary
  directory).
* Prometheus (Debian's ``prometheus``), if installed, scraping the service with the shipped
  alert rules on a clock compressed ``--alert-scale`` times (``10m`` becomes ``20s``), so an
  alert's full life fits in a short soak. Without it ``alerts_fired`` is ``null``.
* ``--clients`` threads sending programs through ``/v1/judge``: accepted, wrong, looping
  (time limit), memory-eating (memory limit) and crashing ones, each with a unique comment so
  the result cache cannot answer it.
* ``--session-clients`` threads living agent sessions through ``/v1/sessions``: each starts
  a background process, runs a few steps (some past their timeout, some a memory bomb) and
  is then closed or abandoned (reaped by the service at its idle TTL); see
  ``soak_sessions.py``. After the load every session must have ended, and the host must hold
  nothing of them: no session process, no extra process under the service, no run cgroup
  with a process, no extra mount (measured against the same probes before the load).

At the end the S3 server is up, the service is stopped (SIGTERM: in-flight work finishes, the
spool is uploaded), and every record in the bucket is read back. The last line is one JSON
object: ``jobs``, ``records_written`` (the service's own count of finished jobs, one record
each), ``records_uploaded``, ``records_lost`` (written but not in the bucket; must be 0),
``duplicates`` (must be 0), ``alerts_fired`` and ``rss_growth_mib`` of the service process
between the end of the warm-up and the end of the load; with sessions, ``sessions`` (what
the clients did and the service counted) and ``leaked_processes``, ``leaked_cgroups``,
``leaked_mounts`` (all must be 0).

    .venv/bin/python benchmarks/soak.py --duration 120
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from soak_sessions import SessionLoad, host_state

RULES = Path(__file__).resolve().parents[1] / "deploy" / "prometheus" / "assay-rules.yml"
ADD = {
    "id": "add",
    "limits": {"time_s": 1.0, "memory_mb": 256},
    "tests": [
        {"kind": "stdio", "input": "1 2\n", "expected": "3\n"},
        {"kind": "stdio", "input": "5 5\n", "expected": "10\n"},
    ],
}
#: The mix: (kind, program). Each gets a unique comment appended per job.
PROGRAMS = (
    ("accepted", "print(sum(map(int, input().split())))"),
    ("wrong", "print(3)"),
    ("looping", "while True:\n    pass"),
    ("memory", "x = bytearray(1 << 31)\nprint(len(x))"),
    ("crashing", "import os\nos.abort()"),
)
_UNITS = {"s": 1, "m": 60, "h": 3600}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def compress(text: str, scale: int) -> str:
    """Every Prometheus duration in a rules file divided by ``scale`` (at least 1 s)."""

    def scaled(m: re.Match[str]) -> str:
        seconds = int(m.group(2)) * _UNITS[m.group(3)]
        return f"{m.group(1)}{max(1, seconds // scale)}s"

    return re.sub(r"(\[|offset |for: |interval: )(\d+)([smh])\b", scaled, text)


def wait_until(check: Any, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"soak: timed out after {timeout:.0f}s waiting until {what}")
        time.sleep(0.25)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def scrape(base: str, by: str | None = None) -> dict[str, float]:
    """The service's metrics, summed over labels, by sample name (and by the value of label
    ``by`` as ``name:value`` where a sample has it)."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{base}/metrics", timeout=10).text
    out: dict[str, float] = collections.defaultdict(float)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] += sample.value
            if by is not None and by in sample.labels:
                out[f"{sample.name}:{sample.labels[by]}"] += sample.value
    return out


def warm_up(base: str, sessions: bool) -> None:
    """One judged batch and one session, so pools are warm before the host is probed."""
    with httpx.Client(base_url=base, timeout=120) as client:
        subs = [{"code": code} for _, code in PROGRAMS[:2]]
        client.post("/v1/judge", json={"problem": ADD, "submissions": subs}).raise_for_status()
        if sessions:
            sid = client.post("/v1/sessions", json={}).raise_for_status().json()["id"]
            client.post(f"/v1/sessions/{sid}/exec", json={"command": "true"}).raise_for_status()
            client.delete(f"/v1/sessions/{sid}").raise_for_status()
    time.sleep(2.0)


class S3:
    """moto's S3 server on one fixed loopback port, stoppable and restartable."""

    def __init__(self) -> None:
        try:
            from moto.server import ThreadedMotoServer
        except ImportError:
            raise SystemExit("soak: needs moto[server] (pip install 'moto[server]')") from None
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._cls = ThreadedMotoServer
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._server: Any = None

    def start(self) -> None:
        deadline = time.monotonic() + 10
        while True:
            server = self._cls(ip_address="127.0.0.1", port=self.port, verbose=False)
            try:
                server.start()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self._server = server

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None


class Load:
    """Client threads sending the mixed programs until told to stop."""

    def __init__(self, base: str, clients: int) -> None:
        self.base = base
        self.clients = clients
        self.stop = threading.Event()
        self.verdicts: collections.Counter[str] = collections.Counter()
        self.jobs = 0
        self.failures: list[str] = []
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(clients)
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def join(self) -> None:
        self.stop.set()
        for t in self._threads:
            t.join()

    def _run(self, client_no: int) -> None:
        with httpx.Client(base_url=self.base, timeout=120) as client:
            while not self.stop.is_set():
                n = next(self._ids)
                subs = [{"code": f"{code}\n# soak {n}-{k}"} for k, (_, code) in enumerate(PROGRAMS)]
                try:
                    r = client.post(
                        "/v1/judge",
                        json={"problem": ADD, "submissions": subs},
                        headers={"x-assay-caller": f"soak-{client_no}"},
                    )
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                    continue
                if r.status_code != 200:
                    self.failures.append(f"HTTP {r.status_code}: {r.text[:200]}")
                    continue
                with self._lock:
                    for result in r.json()["results"]:
                        self.verdicts[result["verdict"]] += 1
                        self.jobs += 1


def start_prometheus(base: str, work: Path, scale: int) -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("prometheus")
    assert binary is not None
    (work / "rules.yml").write_text(compress(RULES.read_text(), scale))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(work / "rules.yml")],
        "scrape_configs": [
            {"job_name": "assay", "static_configs": [{"targets": [base[len("http://") :]]}]}
        ],
    }
    (work / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    prom = f"http://127.0.0.1:{port}"
    wait_until(lambda: httpx.get(f"{prom}/-/ready", timeout=2).status_code == 200, "prometheus", 60)
    return proc, prom


def firing(prom: str) -> set[str]:
    body = httpx.get(f"{prom}/api/v1/alerts", timeout=10).json()
    return {a["labels"]["alertname"] for a in body["data"]["alerts"] if a["state"] == "firing"}


def session_report(
    load: SessionLoad,
    metrics: dict[str, float],
    before: dict[str, Any],
    after: dict[str, Any],
) -> dict[str, Any]:
    """What the session clients did, what the service counted, and what is left on the host."""
    ended = {
        key.split(":", 1)[1]: int(v)
        for key, v in metrics.items()
        if key.startswith("assay_sessions_ended_total:") and v
    }
    return {
        "sessions": {
            **dict(load.counts),
            "failures": len(load.failures),
            "failure_samples": load.failures[:3],
            "created_metric": int(metrics["assay_sessions_created_total"]),
            "ended_metric": ended,
            "steps_metric": int(metrics["assay_session_steps_total"]),
            "open_at_end": int(metrics["assay_sessions_open"]),
            "past_ttl_at_end": int(metrics["assay_sessions_past_ttl"]),
            "host_before": before,
            "host_after": after,
        },
        "leaked_processes": after["tagged_processes"] + after["other_processes"],
        "leaked_cgroups": after["run_cgroups_with_run_processes"],
        "leaked_mounts": max(0, after["service_mounts"] - before["service_mounts"])
        + max(0, after["host_mounts"] - before["host_mounts"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--duration", type=float, default=120.0, help="seconds of load")
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds before RSS is taken")
    ap.add_argument("--clients", type=int, default=4, help="concurrent client threads")
    ap.add_argument("--workers", type=int, default=2, help="sandbox slots of the service")
    ap.add_argument("--s3-down", type=float, default=0.3, help="fraction of the run S3 stops")
    ap.add_argument("--s3-up", type=float, default=0.6, help="fraction of the run S3 returns")
    ap.add_argument("--alert-scale", type=int, default=30, help="alert clock compression")
    ap.add_argument(
        "--sessions",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also open, step, close and abandon agent sessions",
    )
    ap.add_argument("--session-clients", type=int, default=2, help="session client threads")
    ap.add_argument("--idle-ttl", type=float, default=3.0, help="idle TTL of the sessions (s)")
    args = ap.parse_args()
    if not 0 <= args.s3_down < args.s3_up <= 1:
        raise SystemExit("soak: need 0 <= --s3-down < --s3-up <= 1")

    work = Path(tempfile.mkdtemp(prefix="assay-soak-"))
    s3 = S3()
    s3.start()
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL_S3": s3.endpoint,
        "AWS_ACCESS_KEY_ID": "soak",
        "AWS_SECRET_ACCESS_KEY": "soak",
        "AWS_DEFAULT_REGION": "us-east-1",
        "HOME": str(work / "home"),
        "ASSAY_STATE_DIR": str(work / "state"),
    }
    os.environ.update({k: env[k] for k in env if k.startswith("AWS_")})
    url = "s3://assay-soak/records"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = ["serve", "--port", str(port), "--workers", str(args.workers), "--records", url]
    serve = subprocess.Popen(
        [sys.executable, "-m", "assay.cli", *argv],
        env=env,
        stdout=(work / "serve.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    prom_proc: subprocess.Popen[bytes] | None = None
    try:
        wait_until(lambda: httpx.get(f"{base}/readyz", timeout=2).status_code == 200, "serve", 90)
        warm_up(base, args.sessions)
        host_before = host_state(serve.pid)
        prom = None
        if shutil.which("prometheus"):
            prom_proc, prom = start_prometheus(base, work, args.alert_scale)
        else:
            print("soak: prometheus not installed; alerts_fired will be null", file=sys.stderr)
        load = Load(base, args.clients)
        load.start()
        sessions = SessionLoad(base, args.session_clients if args.sessions else 0, args.idle_ttl)
        sessions.start()
        alerts: set[str] = set()
        rss_start = None
        s3_down_s = 0.0
        started = time.monotonic()
        with Progress(
            TextColumn("soak"),
            BarColumn(),
            TextColumn("{task.fields[state]}"),
            TimeRemainingColumn(),
            transient=True,
        ) as progress:
            task = progress.add_task("soak", total=args.duration, state="")
            down_at = started + args.s3_down * args.duration
            up_at = started + args.s3_up * args.duration
            while (now := time.monotonic()) < started + args.duration:
                if rss_start is None and now - started >= args.warmup:
                    rss_start = rss_mib(serve.pid)
                if now >= down_at and now < up_at and s3._server is not None:
                    s3.stop()
                    s3_down_s = now
                elif now >= up_at and s3._server is None:
                    s3.start()
                    s3_down_s = now - s3_down_s
                if prom is not None:
                    alerts |= firing(prom)
                state = (
                    f"jobs {load.jobs}  sessions {sessions.counts['opened']}  "
                    f"S3 {'down' if s3._server is None else 'up'}"
                )
                progress.update(task, completed=now - started, state=state)
                time.sleep(1.0)
        load.join()
        sessions.join()
        rss_end = rss_mib(serve.pid)
        # Every session ends: the closed ones already, the abandoned ones at their idle TTL.
        wait_until(
            lambda: (
                (m := scrape(base))["assay_sessions_open"] == 0 and m["assay_sessions_ending"] == 0
            ),
            "every session has ended",
            120,
        )
        time.sleep(1.0)
        host_after = host_state(serve.pid)
        if s3._server is None:
            s3.start()
        # Let the uploader catch up (it may be backing off), then a graceful stop uploads the rest.
        wait_until(lambda: scrape(base).get("assay_records_spooled", 0) == 0, "spool drains", 180)
        if prom is not None:
            alerts |= firing(prom)
        metrics = scrape(base, by="reason")
        serve.terminate()
        serve.wait(120)
        if serve.returncode not in (0, -15):
            raise SystemExit(f"soak: assay serve exited with {serve.returncode}")
        from assay.telemetry import iter_records

        keys = [(r.get("batch_id"), r.get("job_id")) for r in iter_records(url)]
        written = int(metrics.get("assay_jobs_completed_total", 0))
        spool_left = sum(
            p.read_bytes().count(b"\n")
            for p in (work / "home").rglob("records-*.jsonl")
            if p.is_file()
        )
        result = {
            "jobs": load.jobs,
            "records_written": written,
            "records_uploaded": len(keys),
            "records_lost": written - len(set(keys)),
            "duplicates": len(keys) - len(set(keys)),
            "alerts_fired": None if prom is None else len(alerts),
            "alerts": sorted(alerts),
            "rss_growth_mib": round(rss_end - (rss_start or rss_end), 1),
            "duration_s": args.duration,
            "s3_down_s": round(s3_down_s, 1),
            "spool_left": spool_left,
            "client_failures": len(load.failures),
            "verdicts": dict(load.verdicts),
        }
        if args.sessions:
            result.update(session_report(sessions, metrics, host_before, host_after))
        print(json.dumps(result))
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
        if prom_proc is not None:
            prom_proc.terminate()
            prom_proc.wait(30)
        s3.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
