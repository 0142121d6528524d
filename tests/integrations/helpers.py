"""Helpers for the integration tests: fenced responses and a fake Assay server."""

from __future__ import annotations

import json
from typing import Any

import httpx

from assay import LocalExecutor, Problem, Submission, TestCase
from assay.types import Limits

FENCE = "`" * 3


def fenced(code: str, tag: str = "python") -> str:
    return f"Here is my solution.\n{FENCE}{tag}\n{code}\n{FENCE}\nIt reads the input."


def _test(raw: dict[str, Any]) -> TestCase:
    if raw["kind"] == "call":
        opts = {"fn_name": raw["fn_name"], "args": raw["args"]}
        return TestCase(kind="call", options=opts, expected_value=raw["expected"])
    return TestCase(kind="stdio", input=raw["input"], expected=raw["expected"])


class FakeServer:
    """Answers ``POST /v1/judge`` like the Assay server, judging on a local executor; it can
    be told to fail the next requests with a status code first."""

    def __init__(self, executor: LocalExecutor) -> None:
        self.executor = executor
        self.requests: list[dict[str, Any]] = []
        self.fail_with: list[int] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != "/v1/judge" or request.method != "POST":
            return httpx.Response(404, json={"detail": "not found"})
        if self.fail_with:
            return httpx.Response(self.fail_with.pop(0), headers={"Retry-After": "0"})
        body = json.loads(request.content)
        self.requests.append(body)
        subs = [
            Submission(
                Problem("remote", [_test(t) for t in s["tests"]], Limits(**s["limits"])),
                s["code"],
                s["language"],
            )
            for s in body["submissions"]
        ]
        results = self.executor.run(subs)
        out = [
            {
                "verdict": r.verdict,
                "reward": r.reward,
                "passed": r.judgement.passed if r.judgement else 0,
                "total": len(s.problem.tests),
                "reason": r.reason,
            }
            for r, s in zip(results, subs, strict=True)
        ]
        return httpx.Response(200, json={"results": out})
