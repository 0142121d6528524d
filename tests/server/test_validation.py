"""Bad input gets a 4xx naming the field; overload is a 429 with Retry-After; auth; 413."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from server_helpers import fake_run, live, memory_executor

from assay.executor import Job, RunJob
from assay.server import Settings, create_app


def _post(client: httpx.Client, path: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(path, json=body)


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("/run_code", {"code": "1", "language": "cobol"}, "language"),
    ("/run_code", {"code": "1"}, "language"),
    ("/run_code", {"code": "1", "language": "python", "run_timeout": -1}, "run_timeout"),
    ("/run_code", {"code": "1", "language": "python", "run_timeout": 1e9}, "run_timeout"),
    ("/run_code", {"code": "1", "language": "python", "compile_timeout": 0}, "compile_timeout"),
    ("/run_code", {"code": "1", "language": "python", "memory_limit_MB": -5}, "memory_limit_MB"),
    ("/run_code", {"code": "1", "language": "python", "memory_limit_MB": 10**7}, "memory_limit_MB"),
    ("/run_code", {"code": "x" * 70_000, "language": "python"}, "code"),
    ("/run_code", {"code": "1", "language": "python", "files": {"a": "%%%"}}, "files['a']"),
    (
        "/run_code",
        {"code": "1", "language": "python", "files": {f"f{i}": "" for i in range(5)}},
        "files",
    ),
    ("/run_code", {"code": 5, "language": "python"}, "code"),
    ("/v1/run", {"code": "1", "limits": {"time_s": -1}}, "limits.time_s"),
    ("/v1/run", {"code": "1", "limits": {"memory_mb": 1}}, "limits.memory_mb"),
    ("/v1/run", {"code": "1", "limits": {"bogus": 1}}, "limits.bogus"),
    ("/v1/judge", {"code": "1"}, "problem"),
    ("/v1/judge", {"code": "1", "problem": {"tests": []}}, "problem.tests"),
    (
        "/v1/judge",
        {"code": "1", "problem": {"tests": [{"kind": "stdio", "input": "1"}]}},
        "problem.tests[0].expected",
    ),
    (
        "/v1/judge",
        {"code": "1", "problem": {"tests": [{"kind": "call", "args": [1]}]}},
        "problem.tests[0].fn_name",
    ),
    (
        "/v1/judge",
        {"submissions": [{"code": "1", "language": "klingon"}], "problem": {"tests": []}},
        "problem.tests",
    ),
    (
        "/v1/judge",
        {
            "submissions": [{"code": "1"}, {"code": "1", "language": "klingon"}],
            "problem": {"tests": [{"input": "", "expected": ""}]},
        },
        "submissions[1].language",
    ),
    ("/get_reward", {"query": ["x"], "labels": []}, "labels"),
    ("/get_reward", {"query": ["x"], "labels": ["{not json"]}, "labels[0]"),
    # Nested past the JSON parser's depth: a RecursionError, which was a 500.
    ("/get_reward", {"query": ["x"], "labels": ["[" * 100_000]}, "labels[0]"),
    (
        "/submit",
        {
            "dataset": "d",
            "id": 1,
            "completion": "x",
            "config": {"language": "python", "provided_data": {"test": "[" * 100_000}},
        },
        "config.provided_data.test",
    ),
    ("/get_reward", {"query": ["x"], "labels": [{"inputs": [1]}]}, "labels[0]"),
    (
        "/submit",
        {"dataset": "d", "id": 1, "completion": "x", "config": {"language": "python"}},
        "config.provided_data",
    ),
    (
        "/submit",
        {"dataset": "d", "id": 1, "completion": "x", "config": {"provided_data": {}}},
        "config.language",
    ),
]


@pytest.mark.parametrize(("path", "body", "field"), CASES)
def test_bad_input_names_the_field(
    client: httpx.Client, path: str, body: dict[str, Any], field: str
) -> None:
    r = _post(client, path, body)
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field
    assert field in r.json()["message"]


@pytest.mark.parametrize("path", ["/run_code", "/v1/run", "/v1/judge", "/get_reward", "/submit"])
def test_a_body_nested_past_the_parsers_depth_is_a_422_naming_the_body(
    client: httpx.Client, path: str
) -> None:
    """FastAPI answered it with a bare 400 (its parser's RecursionError is not a decoding
    error); it is the client's input, answered as every bad field is."""
    deep = "[" * 100_000
    r = client.post(path, content=deep, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json() == {"field": "body", "message": "body: not valid JSON: nested too deeply"}
    assert client.get("/v1/batches/nope").status_code == 404  # other errors as they were


def _until(cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_full_queue_is_429_with_retry_after() -> None:
    gate = threading.Event()

    def block(job: Job) -> None:
        gate.wait(10)

    ex = memory_executor(fake_run(block), slots=1, max_queued=1, cache=False)
    try:
        with live(create_app(ex, settings=Settings())) as srv, srv.client() as c:
            results: list[httpx.Response] = []

            def send(i: int) -> None:
                with srv.client() as own:
                    body = {"code": f"print({i})", "language": "python"}
                    results.append(own.post("/run_code", json=body))

            threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
            threads[0].start()  # runs (and blocks the only slot)
            _until(lambda: ex.busy == 1)
            threads[1].start()  # waits in the queue, which is now full
            _until(lambda: ex.queue.depth() == 1)
            r = c.post("/run_code", json={"code": "print(9)", "language": "python"})
            assert r.status_code == 429
            assert int(r.headers["retry-after"]) >= 1
            assert r.json()["field"] == "queue"
            gate.set()
            for t in threads:
                t.join()
            assert sorted(x.status_code for x in results) == [200, 200]
            again = c.post("/run_code", json={"code": "print(9)", "language": "python"})
            assert again.status_code == 200
    finally:
        gate.set()
        ex.close()


def test_auth_on_and_off() -> None:
    ex = memory_executor(fake_run())
    try:
        with live(create_app(ex, settings=Settings(api_token="s3cret"))) as srv:
            with srv.client() as c:
                body = {"code": "print(1)", "language": "python"}
                assert c.post("/run_code", json=body).status_code == 401
                assert c.get("/metrics").status_code == 401
                wrong = c.post("/run_code", json=body, headers={"Authorization": "Bearer no"})
                assert wrong.status_code == 401
                assert wrong.headers["www-authenticate"] == "Bearer"
                assert c.get("/healthz").status_code == 200
                assert c.get("/readyz").status_code == 200
                ok = c.post("/run_code", json=body, headers={"Authorization": "Bearer s3cret"})
                assert ok.status_code == 200 and ok.json()["status"] == "Success"
        with live(create_app(ex, settings=Settings(api_token=None))) as srv, srv.client() as c:
            assert c.post("/run_code", json=body).status_code == 200
    finally:
        ex.close()


def test_body_size_cap_is_413() -> None:
    ex = memory_executor(fake_run())
    try:
        with live(create_app(ex, settings=Settings(max_body_bytes=4096))) as srv:
            with srv.client() as c:
                big = {"code": "#" * 10_000, "language": "python"}
                r = c.post("/run_code", json=big)
                assert r.status_code == 413 and r.json()["field"] == "body"

                def chunks():  # type: ignore[no-untyped-def]
                    yield b'{"code": "'
                    for _ in range(10):
                        yield b"#" * 1000
                    yield b'", "language": "python"}'

                r = c.post(
                    "/run_code", content=chunks(), headers={"content-type": "application/json"}
                )
                assert r.status_code == 413
                small = {"code": "print(1)", "language": "python"}
                assert c.post("/run_code", json=small).status_code == 200
    finally:
        ex.close()


def test_fetch_files_go_through_the_executor() -> None:
    seen: list[Job] = []
    ex = memory_executor(fake_run(seen.append))
    try:
        with live(create_app(ex, settings=Settings())) as srv, srv.client() as c:
            body = {"code": "1", "language": "python", "fetch_files": ["out/a.txt"]}
            r = c.post("/run_code", json=body)
            assert r.status_code == 200, r.text
    finally:
        ex.close()
    assert len(seen) == 1 and isinstance(seen[0], RunJob)
    assert seen[0].collect == ("out/a.txt",)
