"""The client side of the Assay server's native ``POST /v1/judge``.

Request: ``{"submissions": [{"code", "language", "tests": [...], "limits": {...}}]}`` with
tests ``{"kind": "stdio", "input", "expected"}`` or ``{"kind": "call", "fn_name", "args",
"expected"}``; answer: ``{"results": [{"verdict", "reward", "passed", "total", "reason"}]}``
in the same order. One request carries a whole batch, so the server can deduplicate and
schedule it as one.

Failures are sorted by whose they are. Overload (429, honouring ``Retry-After``), 502-504 and
connection errors are retried; when retries run out every row comes back with
``reward=None`` (``verdict="remote_error"``), so a training step survives a server restart.
Any other error status, or an answer of the wrong shape, raises :class:`AssayError`: a wrong
URL or a client/server version mismatch does not heal by itself and must not be hidden.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx

from ..errors import AssayError, ValidationError
from ..judge import Submission

__all__ = ["RemoteJudge", "RemoteResult", "Transport"]

Transport = httpx.BaseTransport | httpx.AsyncBaseTransport
_RETRY_STATUS = frozenset({429, 502, 503, 504})
_MAX_WAIT_S = 30.0


@dataclass(frozen=True, slots=True)
class RemoteResult:
    verdict: str
    reward: float | None
    passed: int
    total: int
    reason: str


_clients: dict[str, httpx.Client] = {}
_clients_lock = threading.Lock()


def _shared_client(timeout: float) -> httpx.Client:
    """One pooled client per process for the real network (per-row reward calls would
    otherwise open a connection each)."""
    key = f"t={timeout}"
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = httpx.Client(timeout=timeout)
        return client


class RemoteJudge:
    """Judges batches on an Assay server at ``url`` (its base URL or the full endpoint).

    ``transport`` replaces the network (e.g. ``httpx.MockTransport`` in tests); a transport
    used for both forms must implement both the sync and the async interface.
    """

    def __init__(
        self,
        url: str,
        *,
        transport: Transport | None = None,
        timeout: float = 600.0,
        retries: int = 3,
        backoff_s: float = 1.0,
    ) -> None:
        base = url.rstrip("/")
        self.endpoint = base if base.endswith("/v1/judge") else base + "/v1/judge"
        self.transport = transport
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s

    @staticmethod
    def encode(submission: Submission) -> dict[str, Any]:
        """The request entry for ``submission``; :class:`ValidationError` for tests the
        endpoint cannot express (script/pytest tests, checkers, call options beyond
        ``fn_name``/``args``)."""
        problem = submission.problem
        if problem.checker is not None:
            raise ValidationError("checker", "/v1/judge takes no checker programs")
        tests: list[dict[str, Any]] = []
        for i, t in enumerate(problem.tests):
            if t.kind == "stdio":
                tests.append({"kind": "stdio", "input": t.input, "expected": t.expected})
            elif t.kind == "call":
                tests.append(
                    {
                        "kind": "call",
                        "fn_name": t.options["fn_name"],
                        "args": t.options["args"],
                        "expected": t.expected_value,
                    }
                )
            else:
                raise ValidationError(
                    f"tests[{i}].kind", f"/v1/judge takes stdio and call tests, not {t.kind!r}"
                )
        code = submission.code
        return {
            "code": code if isinstance(code, str) else code.decode("utf-8", "replace"),
            "language": submission.language,
            "tests": tests,
            "limits": problem.limits.to_dict(),
        }

    def _body(self, subs: list[Submission]) -> dict[str, Any]:
        return {"submissions": [self.encode(s) for s in subs]}

    def judge(self, subs: list[Submission]) -> list[RemoteResult]:
        body = self._body(subs)
        if self.transport is None:
            client, owned = _shared_client(self.timeout), False
        elif isinstance(self.transport, httpx.BaseTransport):
            client, owned = httpx.Client(transport=self.transport, timeout=self.timeout), True
        else:
            raise ValidationError("transport", "the sync form needs an httpx.BaseTransport")
        try:
            failure = ""
            for attempt in range(self.retries + 1):
                try:
                    response = client.post(self.endpoint, json=body)
                except httpx.TransportError as exc:
                    failure = f"{type(exc).__name__}: {exc}"
                    if attempt < self.retries:
                        time.sleep(self._wait(attempt, None))
                    continue
                if response.status_code in _RETRY_STATUS:
                    failure = f"HTTP {response.status_code}"
                    if attempt < self.retries:
                        time.sleep(self._wait(attempt, response))
                    continue
                return self._decode(response, subs)
            return self._unavailable(subs, failure)
        finally:
            if owned:
                client.close()

    async def judge_async(self, subs: list[Submission]) -> list[RemoteResult]:
        body = self._body(subs)
        if self.transport is not None and not isinstance(self.transport, httpx.AsyncBaseTransport):
            raise ValidationError("transport", "the async form needs an httpx.AsyncBaseTransport")
        async with httpx.AsyncClient(transport=self.transport, timeout=self.timeout) as client:
            failure = ""
            for attempt in range(self.retries + 1):
                try:
                    response = await client.post(self.endpoint, json=body)
                except httpx.TransportError as exc:
                    failure = f"{type(exc).__name__}: {exc}"
                    if attempt < self.retries:
                        await asyncio.sleep(self._wait(attempt, None))
                    continue
                if response.status_code in _RETRY_STATUS:
                    failure = f"HTTP {response.status_code}"
                    if attempt < self.retries:
                        await asyncio.sleep(self._wait(attempt, response))
                    continue
                return self._decode(response, subs)
        return self._unavailable(subs, failure)

    def _wait(self, attempt: int, response: httpx.Response | None) -> float:
        hint = response.headers.get("retry-after") if response is not None else None
        try:
            wait = float(hint) if hint is not None else self.backoff_s * 2**attempt
        except ValueError:
            wait = self.backoff_s * 2**attempt
        return min(max(wait, 0.0), _MAX_WAIT_S)

    def _unavailable(self, subs: list[Submission], failure: str) -> list[RemoteResult]:
        reason = f"judge server unavailable after {self.retries + 1} attempts ({failure})"
        return [RemoteResult("remote_error", None, 0, len(s.problem.tests), reason) for s in subs]

    def _decode(self, response: httpx.Response, subs: list[Submission]) -> list[RemoteResult]:
        if response.status_code != 200:
            raise AssayError(
                f"{self.endpoint} answered HTTP {response.status_code}: {response.text[:500]}"
            )
        try:
            results = response.json()["results"]
            if not isinstance(results, list) or len(results) != len(subs):
                raise ValueError(f"{len(subs)} results expected")
            return [_result(r) for r in results]
        except (ValueError, KeyError, TypeError) as exc:
            raise AssayError(f"{self.endpoint} answered an unexpected body: {exc}") from None


def _result(r: dict[str, Any]) -> RemoteResult:
    reward = r["reward"]
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, int | float)):
        raise TypeError(f"reward must be a number or null, got {reward!r}")
    return RemoteResult(
        str(r["verdict"]),
        None if reward is None else float(reward),
        int(r["passed"]),
        int(r["total"]),
        str(r.get("reason") or ""),
    )
