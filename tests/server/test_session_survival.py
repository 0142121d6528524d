"""Sessions survive what real agents do (issue 28), against a live server: orphans, a fork
bomb, timeouts, loopback servers, exact output bytes, a dead notebook interpreter, and
every step in the execution records."""

from __future__ import annotations

import base64
import time

import httpx
import pytest
from sandbox_fusion import RunJupyterRequest, run_jupyter
from sandbox_fusion.models import CommandRunStatus, RunStatus
from server_helpers import Live

from assay.executor import LocalExecutor
from assay.telemetry import MemoryWriter, to_table

SMALL = {"memory_mb": 256, "processes": 32, "disk_mb": 32, "cpu_s": 120}
RAW = b"\x00\xff\xfe\x80 not utf-8\n"
#: Forks sleepers until the PID limit, and takes every PID that frees up afterwards.
FILLER = (
    "import os, time\nwhile True:\n    try:\n        pid = os.fork()\n"
    "    except OSError:\n        time.sleep(0.001)\n        continue\n"
    '    if pid == 0:\n        os.execv("/bin/sleep", ["sleep", "1000"])\n'
)


def _session(client: httpx.Client, **body: object) -> str:
    r = client.post("/v1/sessions", json={"limits": SMALL, **body})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def _exec(client: httpx.Client, sid: str, command: str, **body: object) -> httpx.Response:
    return client.post(f"/v1/sessions/{sid}/exec", json={"command": command, **body})


def test_orphans_are_reaped(client: httpx.Client) -> None:
    """100 finished background processes (orphans once their step ended) leave a session
    whose steps still fork: more than its limit of 32 processes, had they stayed zombies."""
    sid = _session(client)
    for _ in range(50):
        assert _exec(client, sid, "(true &); sleep 0.001 &").json()["exit_code"] == 0
    time.sleep(0.3)
    step = _exec(client, sid, "for i in 1 2 3 4 5; do /bin/true; done; echo forked").json()
    assert (step["exit_code"], step["stdout"]) == (0, "forked\n")
    zombies = _exec(client, sid, "grep -l '^[0-9]* ([^)]*) Z' /proc/[0-9]*/stat | wc -l")
    assert zombies.json()["stdout"] == "0\n"
    client.delete(f"/v1/sessions/{sid}")


def test_fork_bomb_step_leaves_a_usable_session(client: httpx.Client) -> None:
    sid = _session(client)
    bomb = _exec(client, sid, ":(){ :|:& };:", timeout_s=5)
    assert bomb.status_code == 200, bomb.text
    time.sleep(0.5)  # the bomb fills the session's PID limit meanwhile
    after = _exec(client, sid, "echo after")
    assert after.status_code == 200, after.text
    assert after.json()["stdout"] == "after\n"
    info = client.get(f"/v1/sessions/{sid}").json()
    assert info["state"] == "idle"
    client.delete(f"/v1/sessions/{sid}")


def test_a_step_that_cannot_start_says_why_and_the_session_ends(client: httpx.Client) -> None:
    """A process in a session of its own (setsid) that takes every PID that frees up is out
    of reach of what the session kills (finished steps' process groups): the next step
    answers ``pids_limit`` (200, not a 4xx blaming the request, not a 5xx), and later calls
    say the session ended."""
    sid = _session(client)
    setup = _exec(client, sid, f"setsid python3 -c '{FILLER}' >/dev/null 2>&1 &")
    assert setup.status_code == 200, setup.text
    time.sleep(1.0)
    stuck = _exec(client, sid, "echo never")
    assert stuck.status_code == 200, stuck.text
    assert stuck.json()["reason"] == "pids_limit"
    assert stuck.json()["exit_code"] is None
    assert "process" in stuck.json()["stderr"]
    later = _exec(client, sid, "echo later")
    assert later.status_code == 410
    assert later.json()["reason"] == "pids_limit"


@pytest.mark.parametrize("timeout", [0.5, 1.0, 2.0])
def test_step_timeouts_are_accurate(client: httpx.Client, timeout: float) -> None:
    sid = _session(client)
    started = time.monotonic()
    step = _exec(client, sid, "sleep 30", timeout_s=timeout).json()
    took = time.monotonic() - started
    assert step["reason"] == "timeout"
    assert abs(step["wall_s"] - timeout) < 0.1, step["wall_s"]
    assert took < timeout + 0.5, took  # the HTTP round trip and the session's own margin
    client.delete(f"/v1/sessions/{sid}")


def test_loopback_servers_inside_a_session(client: httpx.Client) -> None:
    sid = _session(client)
    serve = "python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &"
    assert _exec(client, sid, serve).json()["exit_code"] == 0
    fetch = (
        "python3 - <<'EOF'\nimport time, urllib.request\nfor _ in range(50):\n    try:\n"
        "        print(urllib.request.urlopen('http://127.0.0.1:8000/').status); break\n"
        "    except OSError:\n        time.sleep(0.1)\nEOF"
    )
    assert _exec(client, sid, fetch, timeout_s=10).json()["stdout"] == "200\n"
    udp = (
        'python3 -c "import socket; a=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        "a.bind(('127.0.0.1', 0)); b=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        "b.sendto(b'ping', a.getsockname()); print(a.recv(4).decode())\""
    )
    assert _exec(client, sid, udp).json()["stdout"] == "ping\n"
    client.delete(f"/v1/sessions/{sid}")


def test_exact_output_bytes(client: httpx.Client) -> None:
    sid = _session(client)
    printf = "printf '" + "".join(f"\\x{b:02x}" for b in RAW) + "'"
    step = _exec(client, sid, printf + "; " + printf + " >&2", output_encoding="base64").json()
    assert step["output_encoding"] == "base64"
    assert base64.b64decode(step["stdout"]) == RAW
    assert base64.b64decode(step["stderr"]) == RAW
    lossy = _exec(client, sid, printf).json()
    assert lossy["stdout"] == RAW.decode(errors="replace")  # the default is unchanged
    client.delete(f"/v1/sessions/{sid}")
    code = f"import sys; sys.stdout.buffer.write({RAW!r})"
    run = client.post("/v1/run", json={"code": code, "output_encoding": "base64"}).json()
    assert base64.b64decode(run["stdout"]) == RAW


def test_a_dead_notebook_interpreter_is_an_error_not_a_timeout(server: Live) -> None:
    request = RunJupyterRequest(cells=["x = 1", "import os; os._exit(3)", "x"])
    resp = run_jupyter(request, endpoint=server.url, max_attempts=1)
    assert resp.status == RunStatus.Failed
    assert resp.driver is not None and resp.driver.status == CommandRunStatus.Error
    assert "exited with status 3" in resp.message
    assert len(resp.cells) == 2  # the cell after the death did not run
    oom = RunJupyterRequest(cells=["b = b'x' * (4 << 30)"])
    resp = run_jupyter(oom, endpoint=server.url, max_attempts=1)
    assert resp.driver is not None and resp.driver.status == CommandRunStatus.Error
    assert "SIGKILL" in resp.message


def test_every_step_and_verification_is_recorded(
    client: httpx.Client, sandbox_executor: LocalExecutor
) -> None:
    # The app tees the executor's writer to its dashboard: the MemoryWriter is inside.
    writer = getattr(sandbox_executor.records, "inner", sandbox_executor.records)
    assert isinstance(writer, MemoryWriter)
    task = {
        "task_id": "neg",
        "instructions": "neg() is wrong",
        "files": {"m.py": "def neg(x):\n    return x\n"},
        "tests": {"test_m.py": "from m import neg\n\ndef test_neg():\n    assert neg(2) == -2\n"},
    }
    sid = _session(client, task=task, episode_id="episode-7")
    assert _exec(client, sid, "echo one").status_code == 200
    assert _exec(client, sid, "sed -i 's/return x/return -x/' m.py").status_code == 200
    verified = client.post(f"/v1/sessions/{sid}/verify", json={}).json()
    client.delete(f"/v1/sessions/{sid}")
    mine = [r for r in writer.records if r.get("session_id") == sid]
    assert [r["kind"] for r in mine] == ["session_step", "session_step", "session_verify"]
    assert {r["episode_id"] for r in mine} == {"episode-7"}
    assert {r["problem_id"] for r in mine} == {"neg"}
    assert mine[0]["code"] == "echo one" and mine[0]["stdout"] == "one\n"
    assert [r["step"] for r in mine[:2]] == [1, 2]
    assert mine[2]["verdict"] == "accepted"
    assert mine[2]["step_reward"] == verified["step_reward"]
    assert mine[2]["reward"] == 1.0
    assert to_table(mine).num_rows == 3  # the records fit the Parquet schema
