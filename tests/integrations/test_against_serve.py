"""Every integration's ``url=`` mode against a real ``assay serve`` (a subprocess, started
as a user would), compared with the same rows judged in-process."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

from assay import LocalExecutor
from assay.integrations.trl import make_reward_func, make_reward_func_async
from assay.integrations.verl import (
    compute_score,
    compute_score_async,
    compute_score_batch,
    compute_score_batch_async,
)
from serve_helpers import assay_serve

from .helpers import fenced

pytestmark = pytest.mark.slow

STDIO = {"inputs": ["1 2\n", "2 2\n"], "outputs": ["3\n", "4\n"]}
CALL = {"inputs": [[2, 3], [1, 1]], "outputs": [[2, 3], [1, 1]], "fn_name": "pair"}
RESPONSES = [
    fenced("a, b = map(int, input().split())\nprint(a + b)"),  # accepted
    fenced("print(3)"),  # wrong on the second test
    fenced("def pair(a, b):\n    return (a, b)"),  # tuples compared as lists (APPS)
    fenced("def pair(a, b):\n    return [b, a]"),  # wrong
    fenced("while True:\n    pass"),  # time limit
]
TRUTHS = [STDIO, STDIO, CALL, CALL, STDIO]


@pytest.fixture(scope="module")
def serve_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with assay_serve(env={**os.environ, "ASSAY_API_TOKEN": ""}, log=log) as url:
        yield url


def test_verl_and_trl_url_modes_agree_with_in_process_judging(
    serve_url: str, executor: LocalExecutor
) -> None:
    sources = ["apps"] * len(RESPONSES)
    local = compute_score_batch(sources, RESPONSES, TRUTHS, executor=executor)
    remote = compute_score_batch(sources, RESPONSES, TRUTHS, url=serve_url)
    assert [r["valid"] for r in remote] == [True] * len(RESPONSES), remote
    assert [r["score"] for r in remote] == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert [r["verdict"] for r in remote] == [r["verdict"] for r in local]
    assert remote[4]["verdict"] == "time_limit"

    one = compute_score("apps", RESPONSES[0], STDIO, None, url=serve_url)
    assert one["score"] == 1.0 and one["valid"]

    async def both() -> tuple[list[dict[str, object]], dict[str, object]]:
        rows = await compute_score_batch_async(
            sources[:2], RESPONSES[:2], TRUTHS[:2], url=serve_url
        )
        row = await compute_score_async("apps", RESPONSES[2], CALL, url=serve_url)
        return rows, row

    rows, row = asyncio.run(both())
    assert [r["score"] for r in rows] == [1.0, 0.0] and row["score"] == 1.0

    f = make_reward_func(column="input_output", url=serve_url, reward="fraction")
    assert f(prompts=["p"] * 2, completions=RESPONSES[:2], input_output=TRUTHS[:2]) == [1.0, 0.5]
    g = make_reward_func_async(column="input_output", url=serve_url)
    got = asyncio.run(g(prompts=["p"] * 3, completions=RESPONSES[2:], input_output=TRUTHS[2:]))
    assert got == [1.0, 0.0, 0.0]
