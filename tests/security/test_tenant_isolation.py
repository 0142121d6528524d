"""Claim: on a service shared by several tenants, nobody reaches what is not theirs.

Attack (issue 26): any client could read or cancel another trainer's batch (a cancelled batch
gave the victim ``reward: null``), act on its sessions, list every caller's batches on the
dashboard, pose as another caller with ``X-Assay-Caller``, and guess ids (a counter).

A real ``assay serve`` (a subprocess, tokens from a file) holds three tenants: ``alice`` and
``bob`` (trainers) and ``ops`` (admin). Bob tries every route that takes an id (the routes are
walked from the app, so a new one cannot be forgotten) with Alice's ids: each must answer
exactly what an id that never existed answers (404), and leave Alice's work untouched.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from assay.server import Settings, create_app
from serve_helpers import assay_serve, free_port, start

pytestmark = pytest.mark.xdist_group("tenant_isolation")

TOKENS = {name: secrets.token_urlsafe(24) for name in ("alice", "bob", "ops")}
SMALL = {"memory_mb": 128, "processes": 32, "disk_mb": 16, "cpu_s": 60}
ADD = {"tests": [{"kind": "stdio", "input": "1 2\n", "expected": "3\n"}]}
GOOD = "print(sum(map(int, input().split())))"
SECRET = b"alice's work"


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_API_TOKEN", "ASSAY_ADMIN"))
    }
    return {**env, **extra}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("tenants")
    tokens = home / "tokens"
    lines = [f"{name}:{token}" for name, token in TOKENS.items()]
    tokens.write_text("# trainers, then the operators\n\n" + "\n".join(lines) + "\n")
    env = _env(ASSAY_API_TOKENS_FILE=str(tokens), ASSAY_ADMIN_TENANTS="ops")
    args = ("--slots", "2", "--records", str(home / "rec"))
    with assay_serve(*args, env=env, log=home / "serve.log") as base:
        yield base


def _client(url: str, name: str | None) -> httpx.Client:
    headers = {"authorization": f"Bearer {TOKENS[name]}"} if name else {}
    return httpx.Client(base_url=url, timeout=60, headers=headers)


@pytest.fixture(scope="module")
def alice(url: str) -> Iterator[httpx.Client]:
    with _client(url, "alice") as c:
        yield c


@pytest.fixture(scope="module")
def bob(url: str) -> Iterator[httpx.Client]:
    with _client(url, "bob") as c:
        yield c


@pytest.fixture(scope="module")
def ops(url: str) -> Iterator[httpx.Client]:
    with _client(url, "ops") as c:
        yield c


def _batch(client: httpx.Client, code: str = GOOD, n: int = 1, **headers: str) -> str:
    subs = [{"code": f"{code}  # {i}"} for i in range(n)]
    r = client.post("/v1/batches", json={"problem": ADD, "submissions": subs}, headers=headers)
    assert r.status_code == 202, r.text
    return str(r.json()["batch_id"])


def _finished(client: httpx.Client, batch_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        status: dict[str, Any] = client.get(f"/v1/batches/{batch_id}").json()
        if status["status"] == "done" or time.monotonic() > deadline:
            return status
        time.sleep(0.1)


def _session(client: httpx.Client, **body: Any) -> str:
    files = {"secret.txt": base64.b64encode(SECRET).decode()}
    r = client.post("/v1/sessions", json={"limits": SMALL, "files": files, **body})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


@dataclass
class Mine:
    batch_id: str
    session_id: str


@pytest.fixture(scope="module")
def mine(alice: httpx.Client) -> Iterator[Mine]:
    """Alice's finished batch and open session (with a file)."""
    batch_id = _batch(alice)
    assert _finished(alice, batch_id)["status"] == "done"
    session_id = _session(alice)
    yield Mine(batch_id, session_id)
    alice.delete(f"/v1/sessions/{session_id}")


# -- every route that takes an id ---------------------------------------------------------------

#: (method, path) -> what Bob sends along with Alice's id. Every route of the app with a path
#: parameter must be here: the test below walks the app's routes and fails on any other.
ATTEMPTS: dict[tuple[str, str], dict[str, Any]] = {
    ("GET", "/v1/batches/{batch_id}"): {},
    ("GET", "/v1/batches/{batch_id}/events"): {},
    ("DELETE", "/v1/batches/{batch_id}"): {},
    ("GET", "/dashboard/api/batches/{batch_id}"): {},
    ("GET", "/v1/sessions/{session_id}"): {},
    ("DELETE", "/v1/sessions/{session_id}"): {},
    ("POST", "/v1/sessions/{session_id}/exec"): {"json": {"command": "echo 0wned > owned"}},
    ("POST", "/v1/sessions/{session_id}/verify"): {"json": {}},
    ("GET", "/v1/sessions/{session_id}/rewards"): {},
    ("POST", "/v1/sessions/{session_id}/fork"): {},
    ("GET", "/v1/sessions/{session_id}/files"): {},
    ("GET", "/v1/sessions/{session_id}/tar"): {},
    ("PUT", "/v1/sessions/{session_id}/tar"): {"content": b""},
    ("POST", "/v1/sessions/{session_id}/cell"): {"json": {"code": "open('owned', 'w')"}},
    ("GET", "/v1/sessions/{session_id}/files/{path:path}"): {},
    ("PUT", "/v1/sessions/{session_id}/files/{path:path}"): {"content": b"0wned"},
    ("DELETE", "/v1/sessions/{session_id}/files/{path:path}"): {},
}


def _walk(routes: list[Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """``(method, path)`` of every route, into included routers (whatever FastAPI nests)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _walk(inner.routes, prefix + route.include_context.prefix)
        elif hasattr(route, "routes") and "{" in route.path:  # a mount with parameters
            yield from _walk(route.routes, prefix + route.path)
        else:
            for method in sorted(getattr(route, "methods", None) or {"*"}):
                if method != "HEAD":
                    yield method, prefix + route.path


ID_ROUTES = sorted(r for r in set(_walk(create_app(settings=Settings()).routes)) if "{" in r[1])


@pytest.mark.parametrize(("method", "path"), ID_ROUTES, ids=[f"{m} {p}" for m, p in ID_ROUTES])
def test_another_tenants_id_answers_as_an_unknown_id(
    method: str, path: str, mine: Mine, alice: httpx.Client, bob: httpx.Client
) -> None:
    if (method, path) not in ATTEMPTS:
        pytest.fail(f"{method} {path} takes an id and is not in ATTEMPTS: add how to attack it")
    extra = ATTEMPTS[(method, path)]

    def target(batch_id: str, session_id: str) -> str:
        return (
            path.replace("{batch_id}", batch_id)
            .replace("{session_id}", session_id)
            .replace("{path:path}", "secret.txt")
        )

    theirs = bob.request(method, target(mine.batch_id, mine.session_id), **extra)
    nobody = secrets.token_hex(16)
    unknown = bob.request(method, target(nobody, nobody), **extra)
    assert theirs.status_code == 404, theirs.text
    # ... and the very answer an id that never existed gets: the id is not confirmed.
    answer = theirs.text.replace(mine.batch_id, "ID").replace(mine.session_id, "ID")
    assert answer == unknown.text.replace(nobody, "ID")
    # Alice's work is untouched: her batch's results, her session and its files.
    status = alice.get(f"/v1/batches/{mine.batch_id}").json()
    assert [r["verdict"] for r in status["results"]] == ["accepted"]
    info = alice.get(f"/v1/sessions/{mine.session_id}")
    assert info.status_code == 200 and info.json()["state"] != "ended", info.text
    files = alice.get(f"/v1/sessions/{mine.session_id}/files").json()["entries"]
    assert sorted(e["name"] for e in files) == ["secret.txt"], files
    assert alice.get(f"/v1/sessions/{mine.session_id}/files/secret.txt").content == SECRET


def test_a_cancel_by_another_tenant_does_not_touch_the_batch(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    slow = "import time; time.sleep(1.0); " + GOOD
    batch_id = _batch(alice, slow, n=2)
    assert bob.delete(f"/v1/batches/{batch_id}").status_code == 404
    status = _finished(alice, batch_id)
    assert [(r["outcome"], r["reward"]) for r in status["results"]] == [("done", 1.0)] * 2


def test_an_ended_session_of_another_tenant_is_unknown_not_gone(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    session_id = _session(alice)
    assert alice.delete(f"/v1/sessions/{session_id}").status_code == 204
    assert alice.get(f"/v1/sessions/{session_id}").status_code == 410  # hers: it ended
    assert bob.get(f"/v1/sessions/{session_id}").status_code == 404  # not his: never was


def test_a_fork_belongs_to_the_parents_tenant(alice: httpx.Client, bob: httpx.Client) -> None:
    session_id = _session(alice)
    try:
        forked = alice.post(f"/v1/sessions/{session_id}/fork")
        if os.environ.get("ASSAY_ISOLATION") == "gvisor":
            # The gVisor tier cannot fork a session (no descriptor passing): a 501 saying
            # so, and no session for anyone to own.
            assert forked.status_code == 501, forked.text
            return
        child = forked.json()["id"]
        try:
            assert bob.get(f"/v1/sessions/{child}").status_code == 404
            assert alice.get(f"/v1/sessions/{child}/files/secret.txt").content == SECRET
        finally:
            alice.delete(f"/v1/sessions/{child}")
    finally:
        alice.delete(f"/v1/sessions/{session_id}")


# -- the caller is the tenant ----------------------------------------------------------------


def _dashboard_batches(
    client: httpx.Client, batch_ids: set[str], wait: bool = False
) -> dict[str, str]:
    """batch id -> recorded caller, of ``batch_ids`` as ``client``'s dashboard lists them;
    ``wait``: until it lists them all (records reach the dashboard as jobs end)."""
    deadline = time.monotonic() + 30
    while True:
        rows = client.get("/dashboard/api/batches", params={"limit": 500}).json()["batches"]
        seen = {r["batch_id"]: r["caller"] for r in rows if r["batch_id"] in batch_ids}
        if not wait or len(seen) == len(batch_ids) or time.monotonic() > deadline:
            return seen
        time.sleep(0.1)


def test_a_header_or_a_body_field_cannot_pose_as_another_tenant(
    alice: httpx.Client, bob: httpx.Client, ops: httpx.Client
) -> None:
    label = f"spoof-{secrets.token_hex(4)}"
    posed = _batch(bob, **{"x-assay-caller": "alice"})
    _finished(bob, posed)
    run = bob.post(
        "/run_code",
        json={"code": "print(1)", "language": "python"},
        headers={"x-assay-caller": label},
    )
    assert run.status_code == 200 and run.json()["status"] == "Success", run.text
    session_id = _session(bob, caller="alice")
    try:
        assert bob.get(f"/v1/sessions/{session_id}").json()["caller"] == "bob"
    finally:
        bob.delete(f"/v1/sessions/{session_id}")
    assert _dashboard_batches(ops, {posed}, wait=True) == {posed: "bob"}
    callers = {c["caller"] for c in ops.get("/dashboard/api/callers").json()["callers"]}
    assert label not in callers and "bob" in callers
    assert _dashboard_batches(alice, {posed}) == {}


def test_the_dashboard_shows_a_tenant_its_own_work_and_the_admin_all(
    mine: Mine, alice: httpx.Client, bob: httpx.Client, ops: httpx.Client
) -> None:
    bobs = _batch(bob)
    _finished(bob, bobs)
    both = {mine.batch_id, bobs}
    assert _dashboard_batches(ops, both, wait=True) == {mine.batch_id: "alice", bobs: "bob"}
    assert _dashboard_batches(alice, both) == {mine.batch_id: "alice"}
    assert {c["caller"] for c in alice.get("/dashboard/api/callers").json()["callers"]} == {"alice"}
    asked = alice.get("/dashboard/api/batches", params={"caller": "bob"}).json()["batches"]
    assert asked == []
    assert ops.get(f"/dashboard/api/batches/{mine.batch_id}").status_code == 200
    assert ops.get(f"/v1/batches/{mine.batch_id}").status_code == 200
    assert ops.get(f"/v1/sessions/{mine.session_id}").status_code == 200
    assert ops.get(f"/v1/sessions/{mine.session_id}/files/secret.txt").content == SECRET


def _common(a: str, b: str) -> int:
    """Length of the prefix ``a`` and ``b`` share."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))


def test_ids_have_128_random_bits(alice: httpx.Client) -> None:
    ids = [_batch(alice) for _ in range(6)]
    sessions = [_session(alice) for _ in range(2)]
    for session_id in sessions:
        alice.delete(f"/v1/sessions/{session_id}")
    ids += sessions
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids), ids
    # A prefix shared with another id would be bits not drawn at random (a counter, a
    # per-process prefix): two random ids share 8 hex digits once in 4 billion.
    shared = max(_common(a, b) for a in ids for b in ids if a != b)
    assert shared < 8, ids


def test_no_token_or_a_wrong_one_is_refused(url: str) -> None:
    for name, headers in (("none", {}), ("wrong", {"authorization": "Bearer " + "x" * 32})):
        with httpx.Client(base_url=url, timeout=30, headers=headers) as c:
            r = c.post("/run_code", json={"code": "print(1)", "language": "python"})
            assert r.status_code == 401, (name, r.text)


# -- an open address needs tokens --------------------------------------------------------------


def _refused(*args: str, env: dict[str, str], log: Path) -> str:
    """``assay serve``'s error line; fails unless it exits with status 2 at once."""
    proc = start(*args, env=env, log=log)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"assay serve {' '.join(args)} started")
    err = log.read_text()
    assert proc.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_serve_refuses_a_public_address_without_tokens(tmp_path: Path) -> None:
    args = ("--host", "0.0.0.0", "--port", str(free_port()))
    line = _refused(*args, env=_env(), log=tmp_path / "log")
    assert "0.0.0.0" in line and "--insecure-no-auth" in line and "ASSAY_API_TOKENS" in line


def test_serve_names_the_malformed_line_of_a_token_file(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# comment\nalice:{TOKENS['alice']}\nbob {TOKENS['bob']}\n")
    env = _env(ASSAY_API_TOKENS_FILE=str(tokens))
    line = _refused("--port", str(free_port()), env=env, log=tmp_path / "log")
    assert "line 3" in line and str(tokens) in line and TOKENS["bob"] not in line
