"""``assay eval --ray ADDRESS`` and ``assay serve --ray ADDRESS``: a separate driver process
joins the test cluster and runs there (eval: the same verdicts as on this machine)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

# The cluster starts (and nodes come back) inside a test's setup: minutes on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray"), pytest.mark.timeout(600)]

CORPORA = Path(__file__).resolve().parents[4] / "shared" / "corpora"
HUMANEVAL = CORPORA / "humaneval" / "HumanEval.jsonl.gz"


@pytest.mark.skipif(not HUMANEVAL.exists(), reason="HumanEval corpus not found")
def test_eval_on_the_cluster(cluster: Any, tmp_path: Path) -> None:
    samples = tmp_path / "s.jsonl"
    rows = [
        {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"},
        {"task_id": "HumanEval/2", "completion": "    return 0.0\n"},
        {"task_id": "HumanEval/2", "solution": "import sys\nsys.exit(0)\n"},
    ]
    samples.write_text("\n".join(json.dumps(r) for r in rows))
    assay = Path(sys.executable).with_name("assay")
    args = [str(HUMANEVAL), "--format", "humaneval", "--samples", str(samples)]
    verdicts = {}
    for where in ("local", "ray"):
        out = tmp_path / f"{where}.jsonl"
        extra = ["--ray", cluster.cluster.address] if where == "ray" else []
        proc = subprocess.run(
            [str(assay), "eval", *args, "--out", str(out), "--records", "off", *extra],
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        got = [json.loads(line) for line in out.read_text().splitlines()]
        verdicts[where] = [r["verdict"] for r in sorted(got, key=lambda r: r["sample_index"])]
    assert verdicts["ray"] == verdicts["local"] == ["accepted", "wrong_answer", "runtime_error"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_on_the_cluster(cluster: Any) -> None:
    port = _free_port()
    assay = Path(sys.executable).with_name("assay")
    args = ["serve", "--port", str(port), "--records", "off", "--log-level", "warning"]
    proc = subprocess.Popen(
        [str(assay), *args, "--ray", cluster.cluster.address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "assay serve --ray did not become ready"
            time.sleep(0.5)
        run = httpx.post(
            f"{base}/run_code", json={"code": "print(6 * 7)", "language": "python"}, timeout=120
        )
        assert run.status_code == 200, run.text
        assert run.json()["run_result"]["stdout"] == "42\n"
        # Sessions are held by the node agents: create, a step, close.
        session = httpx.post(
            f"{base}/v1/sessions", json={"files": {"a.txt": "aGk="}}, timeout=60
        )  # base64
        assert session.status_code == 200, session.text
        url = f"{base}/v1/sessions/{session.json()['id']}"
        step = httpx.post(f"{url}/exec", json={"command": "cat a.txt"}, timeout=60)
        assert step.status_code == 200 and step.json()["stdout"] == "hi", step.text
        assert httpx.delete(url, timeout=60).status_code == 204
        assert httpx.get(url, timeout=30).json()["reason"] == "closed"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
