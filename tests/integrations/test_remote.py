"""The ``url=`` path: requests to ``/v1/judge`` answered by a fake server that judges on the
local executor (httpx.MockTransport), so the remote path is tested without the server."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from assay import AssayError
from assay.integrations.trl import make_reward_func, make_reward_func_async
from assay.integrations.verl import KEYS, compute_score_async, compute_score_batch

from .helpers import FakeServer, fenced

URL = "http://judge.test:8000"
ADD = "a, b = map(int, input().split())\nprint(a + b)"
STDIO = {"inputs": ["1 2\n", "2 2\n"], "outputs": ["3\n", "4\n"]}
CALL = {"inputs": [[2, 3]], "outputs": [5], "fn_name": "add"}


def test_batch_goes_out_as_one_request_in_the_documented_shape(
    server: FakeServer, transport: httpx.MockTransport
) -> None:
    rows = compute_score_batch(
        ["a"] * 4,
        [fenced(ADD), fenced("print(3)"), fenced("def add(a, b):\n    return a + b"), "x"],
        [STDIO, STDIO, CALL, ["assert add(1, 1) == 2"]],
        url=URL,
        transport=transport,
    )
    assert [r["score"] for r in rows] == [1.0, 0.0, 1.0, 0.0]
    assert [r["valid"] for r in rows] == [True, True, True, False]  # script tests: not sendable
    assert "stdio and call" in rows[3]["reason"]
    assert all(tuple(r) == KEYS for r in rows)
    assert len(server.requests) == 1
    subs = server.requests[0]["submissions"]
    assert len(subs) == 3
    assert set(subs[0]) == {"code", "language", "tests", "limits"}
    assert subs[0]["tests"][0] == {"kind": "stdio", "input": "1 2\n", "expected": "3\n"}
    assert subs[2]["tests"][0] == {"kind": "call", "fn_name": "add", "args": [2, 3], "expected": 5}
    assert subs[0]["code"] == ADD + "\n"


def test_fraction_over_url(transport: httpx.MockTransport) -> None:
    f = make_reward_func(column="input_output", url=URL, transport=transport, reward="fraction")
    assert f(prompts=["p"], completions=[fenced("print(3)")], input_output=[STDIO]) == [0.5]


def test_async_forms_over_url(transport: httpx.MockTransport) -> None:
    f = make_reward_func_async(column="input_output", url=URL + "/v1/judge", transport=transport)

    async def main() -> tuple[list[float | None], dict[str, object]]:
        rewards = await f(
            prompts=["p"] * 2, completions=[fenced(ADD), "no"], input_output=[STDIO] * 2
        )
        row = await compute_score_async("a", fenced(ADD), STDIO, url=URL, transport=transport)
        return rewards, row

    rewards, row = asyncio.run(main())
    assert rewards == [1.0, 0.0]
    assert row["score"] == 1.0


def test_overload_is_retried(server: FakeServer, transport: httpx.MockTransport) -> None:
    server.fail_with = [429, 503]
    rows = compute_score_batch(["a"], [fenced(ADD)], [STDIO], url=URL, transport=transport)
    assert rows[0]["score"] == 1.0 and rows[0]["valid"]


def test_server_down_masks_rows_instead_of_failing_the_step() -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    mock = httpx.MockTransport(down)
    f = make_reward_func(column="input_output", url=URL, transport=mock, retries=1)
    assert f(prompts=["p"], completions=[fenced(ADD)], input_output=[STDIO]) == [None]
    rows = compute_score_batch(["a"], [fenced(ADD)], [STDIO], url=URL, transport=mock, retries=0)
    assert rows[0]["verdict"] == "remote_error" and rows[0]["valid"] is False
    assert "connection refused" in rows[0]["reason"]


def test_client_errors_raise() -> None:
    def reject(request: httpx.Request) -> httpx.Response:
        return httpx.Response(422, json={"detail": "bad limits"})

    with pytest.raises(AssayError, match="422"):
        compute_score_batch(
            ["a"], [fenced(ADD)], [STDIO], url=URL, transport=httpx.MockTransport(reject)
        )


def test_malformed_answer_raises() -> None:
    def wrong(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=json.dumps({"results": []}))

    with pytest.raises(AssayError, match="unexpected body"):
        compute_score_batch(
            ["a"], [fenced(ADD)], [STDIO], url=URL, transport=httpx.MockTransport(wrong)
        )
