"""Load on ``POST /run_code``: Assay's server against a minimal unsandboxed baseline.

Both servers run under uvicorn in their own subprocess. The baseline is a FastAPI app (in this
file) that runs each request in a fresh ``python3`` subprocess with no isolation at all: what
"just shell out" costs. Each level sends ``--requests`` programs ``print(1)`` at concurrency
1, 8 and 32 (a bare asyncio HTTP/1.1 client with kept-alive connections) and prints throughput and p50/p99 latency; the last line is
one JSON object.

Every request's program carries a unique comment so Assay's result cache cannot answer it:
each request really runs in a sandbox.

    .venv/bin/python benchmarks/server_load.py --requests 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import httpx

LEVELS = (1, 8, 32)
#: The interpreter Assay's sandbox runs (a pyenv shim on PATH would add ~150 ms per start).
PYTHON = os.environ.get("ASSAY_PYTHON") or (
    "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
)


def baseline_app() -> Any:
    from fastapi import FastAPI

    app = FastAPI()

    @app.post("/run_code")
    async def run_code(body: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            PYTHON,
            "-c",
            body["code"],
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), body.get("run_timeout", 10))
        return {
            "status": "Success" if proc.returncode == 0 else "Failed",
            "run_result": {
                "status": "Finished",
                "return_code": proc.returncode,
                "stdout": out.decode(),
                "stderr": err.decode(),
                "execution_time": time.perf_counter() - started,
            },
        }

    return app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(kind: str, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    if kind == "assay":
        code = f"from assay.server.serving import serve; serve(port={port}, log_level='warning')"
    else:
        here = os.path.dirname(os.path.abspath(__file__))
        code = (
            f"import sys, uvicorn; sys.path.insert(0, {here!r}); import server_load; "
            f"uvicorn.run(server_load.baseline_app(), port={port}, log_level='warning')"
        )
    return subprocess.Popen([sys.executable, "-c", code], env=env)


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server {url} exited with {proc.returncode}")
        try:
            if httpx.post(f"{url}/run_code", json=_body(-1), timeout=30).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server {url} did not start")


def _body(i: int) -> dict[str, Any]:
    return {"code": f"print(1)  # {i}", "language": "python", "run_timeout": 5}


async def _roundtrip(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bytes]:
    """One HTTP/1.1 request on a kept-alive connection: (status, body)."""
    writer.write(request)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length, chunked = 0, False
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        key = key.strip().lower()
        if key == b"content-length":
            length = int(value)
        elif key == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if not chunked:
        return status, await reader.readexactly(length)
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return status, b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)


async def level(url: str, concurrency: int, requests: int, offset: int) -> dict[str, float]:
    """``requests`` POSTs at ``concurrency``, over kept-alive HTTP/1.1 connections.

    The load generator shares the machine with the servers, so it is a bare asyncio client
    (pre-built request bytes, a minimal response parser): a general-purpose client costs
    several milliseconds of CPU per request, taken from both servers alike.
    """
    host, port = url.removeprefix("http://").split(":")
    latencies: list[float] = []
    failures = 0
    counter = iter(range(requests))

    def request(i: int) -> bytes:
        body = json.dumps(_body(offset + i)).encode()
        return (
            f"POST /run_code HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body

    async def worker() -> None:
        nonlocal failures
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            for i in counter:
                data = request(i)
                t = time.perf_counter()
                status, body = await _roundtrip(reader, writer, data)
                latencies.append(time.perf_counter() - t)
                ok = status == 200 and json.loads(body)["run_result"]["stdout"] == "1\n"
                failures += not ok
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "rps": requests / elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "failures": failures,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=200, help="requests per level")
    args = ap.parse_args()
    state = tempfile.mkdtemp(prefix="assay-bench-")
    env = {
        **os.environ,
        "ASSAY_RECORDS": os.path.join(state, "records"),
        "ASSAY_STATE_DIR": os.path.join(state, "state"),
    }
    out: dict[str, Any] = {}
    for kind in ("assay", "baseline"):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start(kind, port, env)
        try:
            wait_ready(url, proc)
            for k, c in enumerate(LEVELS):
                res = asyncio.run(level(url, c, args.requests, k * args.requests))
                print(
                    f"{kind:8s} c={c:<3d} {res['rps']:8.1f} req/s  p50 {res['p50_ms']:7.1f} ms"
                    f"  p99 {res['p99_ms']:7.1f} ms  failures {res['failures']}",
                    flush=True,
                )
                for key, value in res.items():
                    out[f"{kind}_c{c}_{key}"] = round(value, 2)
        finally:
            proc.terminate()
            proc.wait(60)
    summary = {
        "assay_c1_rps": out["assay_c1_rps"],
        "assay_c8_rps": out["assay_c8_rps"],
        "assay_c32_rps": out["assay_c32_rps"],
        "assay_c32_p99_ms": out["assay_c32_p99_ms"],
        "baseline_c1_rps": out["baseline_c1_rps"],
        "baseline_c8_rps": out["baseline_c8_rps"],
        "baseline_c32_p50_ms": out["baseline_c32_p50_ms"],
        "ratio_c8": round(out["assay_c8_rps"] / out["baseline_c8_rps"], 2),
        "failures": sum(v for k, v in out.items() if k.endswith("_failures")),
        "requests_per_level": args.requests,
        "cpus": len(os.sched_getaffinity(0)),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
