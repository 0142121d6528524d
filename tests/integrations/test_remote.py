"""The ``url=`` path: requests to ``/v1/judge`` answered by a fake server that judges on the
local executor (httpx.MockTransport), so the remote path is tested without the server."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from assay import AssayError, Submission, ValidationError
from assay.integrations import RewardConfig
from assay.integrations._judging import prepare
from assay.integrations._remote import RemoteJudge
from assay.integrations.trl import make_reward_func, make_reward_func_async
from assay.integrations.verl import KEYS, compute_score, compute_score_async, compute_score_batch

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
    # script (assert-style) tests are judged by the server too (issue 29: they were all None)
    assert [r["valid"] for r in rows] == [True, True, True, True]
    assert rows[3]["verdict"] == "wrong_answer"  # "x" defines no add: the test fails
    assert all(tuple(r) == KEYS for r in rows)
    assert len(server.requests) == 1
    subs = server.requests[0]["submissions"]
    assert len(subs) == 4
    assert subs[3]["problem"]["tests"][0]["kind"] == "script"
    assert set(subs[0]) == {"code", "language", "problem"}
    assert server.requests[0]["stop_on_failure"] is True  # binary: the verdict is all it needs
    tests = subs[0]["problem"]["tests"]
    assert tests[0] == {"kind": "stdio", "input": "1 2\n", "expected": "3\n", "compare": "tokens"}
    call = subs[2]["problem"]["tests"][0]
    assert (call["fn_name"], call["args"], call["expected_value"]) == ("add", [2, 3], 5)
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


def test_a_refusing_server_masks_the_rows_and_says_why() -> None:
    """veRL needs a row per sample: a 422 (a wrong URL, a version mismatch) gives rows with
    valid=False and the server's words, not an exception in the middle of a step."""

    def reject(request: httpx.Request) -> httpx.Response:
        return httpx.Response(422, json={"detail": "bad limits"})

    mock = httpx.MockTransport(reject)
    rows = compute_score_batch(["a"], [fenced(ADD)], [STDIO], url=URL, transport=mock)
    assert rows[0]["valid"] is False and rows[0]["verdict"] == "remote_error"
    assert "422" in rows[0]["reason"] and "bad limits" in rows[0]["reason"]
    f = make_reward_func(column="input_output", url=URL, transport=mock)
    assert f(prompts=["p"], completions=[fenced(ADD)], input_output=[STDIO]) == [None]


def test_the_client_itself_raises_on_a_malformed_answer() -> None:
    def wrong(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=json.dumps({"results": []}))

    subs = prepare_all([fenced(ADD)], [STDIO])
    with pytest.raises(AssayError, match="unexpected body"):
        RemoteJudge(URL, transport=httpx.MockTransport(wrong)).judge(subs)
    rows = compute_score_batch(
        ["a"], [fenced(ADD)], [STDIO], url=URL, transport=httpx.MockTransport(wrong)
    )
    assert rows[0]["valid"] is False and "unexpected body" in rows[0]["reason"]


def prepare_all(responses: list[str], truths: list[object]) -> list[Submission]:
    config = RewardConfig(url=URL)
    subs = [prepare(r, t, config) for r, t in zip(responses, truths, strict=True)]
    assert all(isinstance(s, Submission) for s in subs)
    return [s for s in subs if isinstance(s, Submission)]


def test_call_tests_keep_their_options_over_url(transport: httpx.MockTransport) -> None:
    """APPS call tests compare tuples as lists and accept alternatives: the server applies
    the same options, so url= and in-process judging agree."""
    gt = {"inputs": [[2, 3]], "outputs": [[2, 3]], "fn_name": "pair"}
    code = fenced("def pair(a, b):\n    return (a, b)")
    assert compute_score("a", code, gt, url=URL, transport=transport)["score"] == 1.0


def test_values_json_would_change_are_refused_per_row() -> None:
    from assay import Problem, TestCase

    t = TestCase(kind="call", options={"fn_name": "f", "args": [(1, 2)]}, expected_value=1)
    with pytest.raises(ValidationError, match="tuples"):
        RemoteJudge.encode(Submission(Problem("p", [t]), "def f(x): return 1"))


def test_the_caller_name_goes_to_the_server(
    server: FakeServer, transport: httpx.MockTransport
) -> None:
    """The server's fair share, logs and records name the trainer, not its IP (issue 29)."""
    f = make_reward_func(column="input_output", url=URL, transport=transport)
    f(prompts=["p"], completions=[fenced(ADD)], input_output=[STDIO])
    g = make_reward_func(column="input_output", url=URL, transport=transport, caller="run-7")
    g(prompts=["p"], completions=[fenced(ADD)], input_output=[STDIO])
    compute_score("a", fenced(ADD), STDIO, url=URL, transport=transport)
    assert server.callers == ["trl", "run-7", "verl"]
