"""Helpers for the integration tests: fenced responses and a fake Assay server."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pydantic

from assay import LocalExecutor, ValidationError
from assay.server import Settings, native
from assay.server.models import JudgeRequest

FENCE = "`" * 3


def fenced(code: str, tag: str = "python") -> str:
    return f"Here is my solution.\n{FENCE}{tag}\n{code}\n{FENCE}\nIt reads the input."


class FakeServer:
    """Answers ``POST /v1/judge`` as the Assay server does (its own request models and
    conversion, so a request the real server would refuse is refused here too), judging on
    a local executor; it can be told to fail the next requests with a status code first."""

    def __init__(self, executor: LocalExecutor) -> None:
        self.executor = executor
        self.requests: list[dict[str, Any]] = []
        self.callers: list[str | None] = []
        self.fail_with: list[int] = []
        self.settings = Settings()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path != "/v1/judge" or request.method != "POST":
            return httpx.Response(404, json={"detail": "not found"})
        if self.fail_with:
            return httpx.Response(self.fail_with.pop(0), headers={"Retry-After": "0"})
        body = json.loads(request.content)
        self.requests.append(body)
        self.callers.append(request.headers.get("x-assay-caller"))
        try:
            parsed = JudgeRequest.model_validate(body)
            subs = native.submissions(parsed, self)  # type: ignore[arg-type]
        except (pydantic.ValidationError, ValidationError) as exc:
            return httpx.Response(422, json={"detail": str(exc)})
        results = self.executor.run(
            subs, stop_on_failure=parsed.stop_on_failure, deadline_s=parsed.deadline_s
        )
        out = [native.to_result(r).model_dump() for r in results]
        return httpx.Response(200, json={"results": out})
