"""/v1/sessions against a live server: create, steps, files, fork, close, reasons, 4xx/429."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import textwrap
import time

import httpx
import pytest
from server_helpers import live

from assay.errors import Overloaded
from assay.scheduler import FairQueue
from assay.server import Settings, create_app
from assay.server.sessions import ExecResponse

SMALL = {"memory_mb": 128, "processes": 32, "disk_mb": 32, "cpu_s": 60}


def _create(client: httpx.Client, **body: object) -> str:
    r = client.post("/v1/sessions", json={"limits": SMALL, **body})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def test_session_lifecycle(client: httpx.Client) -> None:
    sid = _create(client, files={"task.txt": base64.b64encode(b"do it").decode()})
    base = f"/v1/sessions/{sid}"
    r = client.post(f"{base}/exec", json={"command": "cat task.txt; mkdir d; cd d; export V=7"})
    assert r.status_code == 200, r.text
    assert r.json()["stdout"] == "do it" and r.json()["exit_code"] == 0
    step = client.post(f"{base}/exec", json={"command": "pwd; echo $V; cat"}, params={}).json()
    assert step["stdout"] == "/work/d\n7\n"
    step = client.post(f"{base}/exec", json={"command": "cat", "stdin": "in"}).json()
    assert step["stdout"] == "in"
    slow = client.post(
        f"{base}/exec", json={"command": "echo a; sleep 20", "idle_timeout_s": 0.5}
    ).json()
    assert slow["timed_out"] and slow["reason"] == "idle_timeout" and slow["stdout"] == "a\n"
    assert set(slow) == set(ExecResponse.model_fields)  # the documented shape, exactly

    assert client.put(f"{base}/files/src/x.bin", content=b"\x00\xff").status_code == 204
    got = client.get(f"{base}/files/src/x.bin")
    assert got.status_code == 200 and got.content == b"\x00\xff"
    listing = client.get(f"{base}/files", params={"dir": "src"}).json()
    assert [e["name"] for e in listing["entries"]] == ["x.bin"]
    assert client.delete(f"{base}/files/src/x.bin").status_code == 204
    assert client.get(f"{base}/files/src/x.bin").status_code == 400
    escape = client.get(f"{base}/files/..%2Fetc%2Fpasswd")
    assert (escape.status_code, escape.json()["field"]) == (422, "path"), escape.text

    child = client.post(f"{base}/fork").json()["id"]
    assert (
        client.post(f"/v1/sessions/{child}/exec", json={"command": "cat /work/task.txt"}).json()[
            "stdout"
        ]
        == "do it"
    )
    info = client.get(base).json()
    assert info["state"] == "idle" and info["steps"] == 4 and info["limits"]["memory_mb"] == 128

    for s in (sid, child):
        assert client.delete(f"/v1/sessions/{s}").status_code == 204
    gone = client.post(f"{base}/exec", json={"command": "true"})
    assert gone.status_code == 410 and gone.json()["reason"] == "closed"
    assert client.get(base).status_code == 410
    assert client.get("/v1/sessions/nonexistent").status_code == 404


def test_bad_input_names_the_field(client: httpx.Client) -> None:
    r = client.post("/v1/sessions", json={"ttl_s": -5})
    assert r.status_code == 422 and r.json()["field"] == "ttl_s"
    r = client.post("/v1/sessions", json={"limits": {"memory_mb": 1}})
    assert r.status_code == 422 and r.json()["field"] == "limits.memory_mb"
    r = client.post("/v1/sessions", json={"files": {"../x": ""}})
    assert r.status_code == 422 and r.json()["field"].startswith("files[")
    r = client.post("/v1/sessions", json={"priority": "urgent"})
    assert r.status_code == 422 and r.json()["field"] == "priority"
    sid = _create(client, priority="low", caller="rollouts")
    try:
        info = client.get(f"/v1/sessions/{sid}").json()
        assert (info["priority"], info["caller"]) == (2, "rollouts")
        r = client.post(f"/v1/sessions/{sid}/exec", json={"command": "true", "timeout_s": 0})
        assert r.status_code == 422 and r.json()["field"] == "timeout_s"
        r = client.post(f"/v1/sessions/{sid}/exec", json={"cmd": "true"})
        assert r.status_code == 422
    finally:
        client.delete(f"/v1/sessions/{sid}")


@pytest.fixture
def capped(sandbox_executor, monkeypatch):  # type: ignore[no-untyped-def]
    settings = Settings(api_token="s3cret", max_sessions=2)
    with live(create_app(sandbox_executor, settings=settings)) as srv:
        with srv.client(headers={"authorization": "Bearer s3cret"}) as c:
            yield srv, c


def test_too_many_sessions_is_429_and_the_token_is_required(capped) -> None:  # type: ignore[no-untyped-def]
    srv, client = capped
    with srv.client() as anonymous:
        assert anonymous.post("/v1/sessions", json={}).status_code == 401
    ids = [_create(client), _create(client)]
    r = client.post("/v1/sessions", json={"limits": SMALL})
    assert r.status_code == 429 and "Retry-After" in r.headers
    client.delete(f"/v1/sessions/{ids[0]}")
    ids.append(_create(client))
    for sid in ids[1:]:
        client.delete(f"/v1/sessions/{sid}")


def test_the_fast_step_path_answers_as_the_route_does(
    client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps skip FastAPI's routing (``sessions.exec_fast``); with it off, the route gives
    the same answers: output, encodings, and each error (410, 404, 422 naming the field)."""
    sid = _create(client)
    gone = _create(client)
    client.delete(f"/v1/sessions/{gone}")
    requests = [
        (sid, {"command": "printf 'a\\377'; echo err >&2; exit 3", "output_encoding": "base64"}),
        (
            sid,
            {
                "command": "cat",
                "stdin": base64.b64encode(b"\x00in").decode(),
                "stdin_encoding": "base64",
            },
        ),
        (sid, {"command": "cat", "stdin": "not base64!", "stdin_encoding": "base64"}),
        (sid, {"command": "true", "timeout_s": "soon"}),
        (sid, {"comand": "true"}),
        (gone, {"command": "true"}),
        ("no-such-session", {"command": "true"}),
    ]

    def answers() -> list[tuple[int, dict[str, object]]]:
        out = []
        for target, body in requests:
            r = client.post(f"/v1/sessions/{target}/exec", json=body)
            got = r.json()
            for timing in ("cpu_s", "wall_s", "peak_memory_bytes"):
                got.pop(timing, None)
            out.append((r.status_code, got))
        return out

    fast = answers()
    import assay.server.sessions as routes

    async def never(*args: object) -> bool:
        return False

    monkeypatch.setattr(routes, "exec_fast", never)
    assert answers() == fast
    monkeypatch.undo()

    # A full queue is a 429 with Retry-After on both paths (not a 500 on the fast one).
    def full(*args: object, **kwargs: object) -> None:
        raise Overloaded(8, 8, 1, 2.5)

    def overloaded() -> tuple[int, str | None, str]:
        r = client.post(f"/v1/sessions/{sid}/exec", json={"command": "true"})
        return r.status_code, r.headers.get("retry-after"), r.text

    monkeypatch.setattr(FairQueue, "put_many", full)  # where both paths queue a step
    busy = overloaded()
    monkeypatch.setattr(routes, "exec_fast", never)
    assert overloaded() == busy
    assert busy[:2] == (429, "3") and '"field":"queue"' in busy[2], busy
    monkeypatch.undo()
    assert [status for status, _ in fast] == [200, 200, 422, 422, 422, 410, 404]
    assert base64.b64decode(fast[0][1]["stdout"]) == b"a\xff"  # type: ignore[arg-type]
    assert fast[2][1]["field"] == "stdin" and fast[4][1]["field"] == "command"
    client.delete(f"/v1/sessions/{sid}")


CLIENT = """
import httpx, sys
c = httpx.Client(base_url=sys.argv[1], timeout=60)
sid = c.post("/v1/sessions", json={"idle_ttl_s": 2.0, "limits": {"memory_mb": 128}}).json()["id"]
c.post(f"/v1/sessions/{sid}/exec", json={"command": "cp /bin/sleep /tmp/TAG; (/tmp/TAG 600 &)"})
print(sid, flush=True)
import time; time.sleep(600)
"""


def _named(tag: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as fh:
                if fh.read().strip() == tag:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_a_killed_client_leaves_no_session_after_one_idle_ttl(server, client) -> None:  # type: ignore[no-untyped-def]
    tag = f"asy-{os.urandom(5).hex()}"[:15]
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CLIENT).replace("TAG", tag), server.url],
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        sid = proc.stdout.readline().decode().strip()
        assert sid
        # The step returns once its shell is done; the background copy execs a moment later
        # (later still on a loaded host, at a session's lower CPU weight).
        seen = time.monotonic() + 10
        while not _named(tag) and time.monotonic() < seen:
            time.sleep(0.05)
        assert _named(tag)
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert client.get(f"/v1/sessions/{sid}").status_code == 200  # the server keeps it ...
    deadline = time.monotonic() + 2.0 + 8.0  # ... one idle TTL, the reaper, a loaded host
    while (_named(tag) or client.get(f"/v1/sessions/{sid}").status_code == 200) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.2)
    r = client.get(f"/v1/sessions/{sid}")
    assert r.status_code == 410 and r.json()["reason"] == "idle_ttl"
    assert _named(tag) == []
