"""Two tenants on one ``assay serve``: one attacks with sessions, the other runs a batch.

Tenant ``b`` runs a batch of plain runs (``POST /v1/run``, a few at a time) twice: alone,
then while tenant ``a`` runs hostile sessions against the same service: sleeping steps
(more than the slots), fork bombs, downloads of a 768 MiB sparse file, and floods of
session creates and forks. The claim (issue 26): the batch finishes within 1.5x of its time
alone, with identical verdicts (status and output of every run).

Tokens go as ``Authorization: Bearer``: with ``ASSAY_API_TOKENS="a:tokA,b:tokB"`` the
service maps them to tenants; a service without tenants ignores them (no token set), and
the callers are told apart by ``X-Assay-Caller`` and the sessions' ``caller``. The last
line printed is one JSON object with the figures.

    .venv/bin/python benchmarks/tenants_load.py --runs 96 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

TOKENS = {"a": "tokA", "b": "tokB"}
SMALL = {"memory_mb": 128, "processes": 32, "disk_mb": 64, "cpu_s": 60}
#: ~0.15 s of CPU, output depends on the run's index: the verdict is status + stdout.
PROGRAM = "s = 0\nfor i in range({n}):\n    s = (s * 31 + i) % 1000003\nprint({k}, s)\n"
ATTACKS = "sleep,bomb,download,create"
FORK_BOMB = "b(){ b | b & }; b; sleep 30"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client(url: str, tenant: str, timeout: float = 120) -> httpx.Client:
    headers = {"Authorization": f"Bearer {TOKENS[tenant]}", "X-Assay-Caller": f"tenant-{tenant}"}
    return httpx.Client(base_url=url, headers=headers, timeout=timeout)


def batch(url: str, runs: int, concurrency: int) -> tuple[float, list[tuple[str, str]]]:
    """Tenant b's batch: seconds it took and each run's (status, stdout)."""
    with _client(url, "b") as c:

        def one(k: int) -> tuple[str, str]:
            code = PROGRAM.format(n=300_000, k=k)
            r = c.post("/v1/run", json={"code": code, "limits": {"time_s": 10}})
            if r.status_code != 200:
                return (f"http {r.status_code}", r.text[:200])
            body = r.json()
            return (str(body["status"]), str(body["stdout"]))

        started = time.monotonic()
        with ThreadPoolExecutor(concurrency) as pool:
            verdicts = list(pool.map(one, range(runs)))
        return time.monotonic() - started, verdicts


class Attack:
    """Tenant a's hostile sessions, each kind on its own threads until :meth:`stop`."""

    def __init__(self, url: str, sleepers: int) -> None:
        self.url = url
        self.sleepers = sleepers
        self.stopping = threading.Event()
        self.threads: list[threading.Thread] = []
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def _count(self, what: str) -> None:
        with self._lock:
            self.counts[what] = self.counts.get(what, 0) + 1

    def _loop(self, body: Callable[[httpx.Client], None]) -> None:
        with _client(self.url, "a", timeout=60) as c:
            while not self.stopping.is_set():
                try:
                    body(c)
                except httpx.HTTPError as exc:
                    self._count(f"error {type(exc).__name__}")
                    time.sleep(0.2)

    def _session(self, c: httpx.Client, **limits: int) -> str | None:
        r = c.post("/v1/sessions", json={"limits": {**SMALL, **limits}, "caller": "tenant-a"})
        self._count(f"create {r.status_code}")
        if r.status_code != 200:
            time.sleep(0.5)
            return None
        return str(r.json()["id"])

    def _steps(
        self, command: str, timeout_s: float, **limits: int
    ) -> Callable[[httpx.Client], None]:
        sid: list[str] = []

        def body(c: httpx.Client) -> None:
            if not sid:
                made = self._session(c, **limits)
                if made is None:
                    return
                sid.append(made)
            r = c.post(
                f"/v1/sessions/{sid[0]}/exec",
                json={"command": command, "timeout_s": timeout_s},
            )
            self._count(f"step {r.status_code}")
            if r.status_code != 200:
                sid.clear()

        return body

    def _download(self) -> Callable[[httpx.Client], None]:
        sid: list[str] = []

        def body(c: httpx.Client) -> None:
            if not sid:
                made = self._session(c, disk_mb=1024)
                if made is None:
                    return
                c.post(f"/v1/sessions/{made}/exec", json={"command": "truncate -s 768M big"})
                sid.append(made)
            with c.stream("GET", f"/v1/sessions/{sid[0]}/files/big") as r:
                for _ in r.iter_bytes(1 << 20):
                    if self.stopping.is_set():
                        break
            self._count(f"download {r.status_code}")

        return body

    def _create_flood(self, c: httpx.Client) -> None:
        sid = self._session(c)
        if sid is not None:
            forks = [c.post(f"/v1/sessions/{sid}/fork") for _ in range(3)]
            for f in forks:
                self._count(f"fork {f.status_code}")
                if f.status_code == 200:
                    c.delete(f"/v1/sessions/{f.json()['id']}")
            c.delete(f"/v1/sessions/{sid}")

    def start(self, kinds: set[str]) -> None:
        bodies: list[Callable[[httpx.Client], None]] = []
        if "sleep" in kinds:
            bodies += [self._steps("sleep 60", 70) for _ in range(self.sleepers)]
        if "bomb" in kinds:
            bodies += [self._steps(FORK_BOMB, 10) for _ in range(2)]
        if "download" in kinds:
            bodies += [self._download() for _ in range(2)]
        if "create" in kinds:
            bodies += [self._create_flood for _ in range(4)]
        for body in bodies:
            t = threading.Thread(target=self._loop, args=(body,), daemon=True)
            t.start()
            self.threads.append(t)

    def stop(self) -> None:
        self.stopping.set()


def serve(slots: int, isolation: str = "default") -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "ASSAY_API_TOKENS": ",".join(f"{k}:{v}" for k, v in TOKENS.items())}
    env.pop("ASSAY_API_TOKEN", None)
    cmd = [sys.executable, "-c", "from assay.cli import main; main()", "serve"]
    proc = subprocess.Popen(
        [*cmd, "--port", str(port), "--slots", str(slots), "--isolation", isolation],
        stdout=subprocess.DEVNULL,
        stderr=open(os.environ.get("TENANTS_LOAD_LOG", os.devnull), "wb"),
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("assay serve did not start")
        time.sleep(0.2)


def measure(
    runs: int = 24,
    concurrency: int = 4,
    slots: int = 2,
    sleepers: int = 8,
    attacks: str = ATTACKS,
    settle_s: float = 5.0,
    isolation: str = "default",
    rounds: int = 1,
) -> dict[str, Any]:
    """Tenant b's batch alone ``rounds`` times, then as many times under tenant a's attacks,
    on a fresh ``assay serve``; the ratio is of the medians (one batch is a few seconds,
    and this machine is shared: a single pair is noisy)."""
    proc, url = serve(slots, isolation)
    try:
        batch(url, 4, concurrency)  # warm-up: sandboxes armed, estimates seeded
        alone = [batch(url, runs, concurrency) for _ in range(rounds)]
        attack = Attack(url, sleepers)
        attack.start(set(attacks.split(",")))
        time.sleep(settle_s)
        attacked = [batch(url, runs, concurrency) for _ in range(rounds)]
        counts = dict(sorted(attack.counts.items()))  # (what the service answered meanwhile)
        attack.stop()
    finally:
        proc.terminate()  # uvicorn's graceful stop; its sessions are closed with it
        proc.wait()
    alone_s = statistics.median(t for t, _ in alone)
    attacked_s = statistics.median(t for t, _ in attacked)
    reference = alone[0][1]
    verdicts = [v for _, v in alone + attacked]
    figures: dict[str, Any] = {
        "runs": runs,
        "rounds": rounds,
        "attacks": attacks,
        "slots": slots,
        "isolation": isolation,
        "alone_s": round(alone_s, 2),
        "under_attack_s": round(attacked_s, 2),
        "ratio": round(attacked_s / alone_s, 2),
        "each_alone_s": [round(t, 2) for t, _ in alone],
        "each_under_attack_s": [round(t, 2) for t, _ in attacked],
        "verdicts_identical": all(v == reference for v in verdicts),
        "verdicts_ok": min(sum(x[0] == "ok" for x in v) for v in verdicts),
        "attack": counts,
        "load_1min": round(os.getloadavg()[0], 2),
    }
    if not figures["verdicts_identical"]:
        odd = next(v for v in verdicts if v != reference)
        figures["differences"] = [
            (i, a, b) for i, (a, b) in enumerate(zip(reference, odd, strict=True)) if a != b
        ][:5]
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=24, help="plain runs in tenant b's batch")
    ap.add_argument("--concurrency", type=int, default=4, help="tenant b's runs in flight")
    ap.add_argument("--slots", type=int, default=2, help="assay serve --slots")
    ap.add_argument("--sleepers", type=int, default=8, help="tenant a's sleeping sessions")
    ap.add_argument("--attacks", default=ATTACKS, help="which of " + ATTACKS)
    ap.add_argument("--isolation", default="default", help="assay serve --isolation")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds of attack before")
    ap.add_argument(
        "--rounds", type=int, default=3, help="batches alone and under attack (medians compared)"
    )
    args = ap.parse_args()
    figures = measure(
        args.runs,
        args.concurrency,
        args.slots,
        args.sleepers,
        args.attacks,
        args.settle,
        args.isolation,
        args.rounds,
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
