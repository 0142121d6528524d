"""The client side of the Assay server's native ``POST /v1/judge``.

Request: ``{"submissions": [{"code", "language", "problem": {"tests": [...], "limits":
{...}}}], "stop_on_failure", "deadline_s"}`` with tests ``{"kind": "stdio", "input",
"expected", "compare"}``, ``{"kind": "call", "fn_name", "args", "expected_value",
"options"}`` or ``{"kind": "script", "code", "options"}`` (assert-style tests: MBPP,
HumanEval, AceCoder), and the ``X-Assay-Caller`` header (the fair-share key); answer: ``{"results": [{"verdict", "reward", "passed", "total", "reason"}]}``
in the same order. One request carries a whole batch, so the server can deduplicate and
schedule it as one. Only what the server judges the same way is sent: a test it cannot
express (pytest tests, checkers, call options other than :data:`CALL_OPTIONS`,
values JSON would change, such as tuples) fails its row with :class:`ValidationError`.

Failures are sorted by whose they are. Overload (429, honouring ``Retry-After``), 502-504 and
connection errors are retried; when retries run out every row comes back with
``reward=None`` (``verdict="remote_error"``), so a training step survives a server restart.
Any other error status, or an answer of the wrong shape, raises :class:`RemoteRefused`: a
wrong URL or a client/server version mismatch does not heal by itself and must not be
hidden (the trainer adapters log it and mask the rows).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from dataclasses import KW_ONLY, dataclass
from typing import Any

import httpx

from ..errors import RemoteRefused, ValidationError
from ..judge import Submission, TestCase
from ..types import Limits

__all__ = [
    "CALL_OPTIONS",
    "SCRIPT_OPTIONS",
    "RemoteJudge",
    "RemoteRefused",
    "RemoteResult",
    "Transport",
]

Transport = httpx.BaseTransport | httpx.AsyncBaseTransport
_RETRY_STATUS = frozenset({429, 502, 503, 504})
_MAX_WAIT_S = 30.0
#: Call-test options ``/v1/judge`` takes (beyond ``fn_name`` and ``args``).
CALL_OPTIONS = frozenset({"also", "tuples_as_lists", "atol", "rtol"})
#: Script-test options ``/v1/judge`` takes (the dataset formats' setup, call and requires).
SCRIPT_OPTIONS = frozenset({"setup", "call", "requires"})
#: The limits ``/v1/judge`` lets a request set.
_LIMIT_FIELDS = ("time_s", "wall_s", "memory_mb", "processes", "output_bytes")


def _json_faithful(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` comes back from JSON as itself (no tuple, set, bytes, NaN...)."""
    if depth > 100:
        return False
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is list:
        return all(_json_faithful(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _json_faithful(v, depth + 1) for k, v in value.items())
    return False


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


@dataclass(frozen=True)
class RemoteJudge:
    """Judges batches on an Assay server at ``url`` (its base URL or the full endpoint).

    ``transport`` replaces the network (e.g. ``httpx.MockTransport`` in tests); a transport
    used for both forms must implement both the sync and the async interface.
    ``stop_on_failure``, ``deadline_s`` and ``caller`` go to the server with every request.
    """

    url: str
    _: KW_ONLY
    transport: Transport | None = None
    timeout: float = 600.0
    retries: int = 3
    backoff_s: float = 1.0
    stop_on_failure: bool = False
    deadline_s: float | None = None
    #: Sent as ``X-Assay-Caller``: the server's fair-share key and the name its logs and
    #: records give this trainer (without it, everything is the client's IP address).
    caller: str | None = None

    @property
    def endpoint(self) -> str:
        base = self.url.rstrip("/")
        return base if base.endswith("/v1/judge") else base + "/v1/judge"

    @staticmethod
    def encode(submission: Submission) -> dict[str, Any]:
        """The request entry for ``submission``; :class:`ValidationError` naming the test
        for what the endpoint cannot express the same way (see the module docstring)."""
        problem = submission.problem
        if problem.checker is not None:
            raise ValidationError("checker", "/v1/judge takes no checker programs")
        tests = [_test(i, t) for i, t in enumerate(problem.tests)]
        code = submission.code
        return {
            "code": code if isinstance(code, str) else code.decode("utf-8", "replace"),
            "language": submission.language,
            "problem": {
                "id": problem.id,
                "tests": tests,
                "limits": _limits(problem.limits),
            },
        }

    def _body(self, subs: list[Submission]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "submissions": [self.encode(s) for s in subs],
            "stop_on_failure": self.stop_on_failure,
        }
        if self.deadline_s is not None:
            body["deadline_s"] = self.deadline_s
        return body

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
                    response = client.post(self.endpoint, json=body, headers=self._headers)
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
                    response = await client.post(self.endpoint, json=body, headers=self._headers)
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

    @property
    def _headers(self) -> dict[str, str]:
        return {"X-Assay-Caller": self.caller} if self.caller else {}

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
            raise RemoteRefused(
                f"{self.endpoint} answered HTTP {response.status_code}: {response.text[:500]}"
            )
        try:
            results = response.json()["results"]
            if not isinstance(results, list) or len(results) != len(subs):
                raise ValueError(f"{len(subs)} results expected")
            return [_result(r) for r in results]
        except (ValueError, KeyError, TypeError) as exc:
            raise RemoteRefused(f"{self.endpoint} answered an unexpected body: {exc}") from None


def _limits(limits: Limits) -> dict[str, Any]:
    """The limits that differ from Assay's defaults (the server applies its own defaults,
    capped by its settings, to the rest); ``file_bytes`` and ``disk_mb`` are the server's."""
    default = Limits()
    return {
        f: getattr(limits, f)
        for f in _LIMIT_FIELDS
        if getattr(limits, f) != getattr(default, f) or f == "time_s"
    }


def _test(i: int, t: TestCase) -> dict[str, Any]:
    if t.kind == "stdio":
        return {"kind": "stdio", "input": t.input, "expected": t.expected, "compare": t.compare}
    if t.kind == "script":
        extra = sorted(set(t.options) - SCRIPT_OPTIONS)
        if extra:
            raise ValidationError(
                f"tests[{i}].options", f"/v1/judge cannot apply {', '.join(extra)} to a script test"
            )
        return {"kind": "script", "code": t.code, "options": dict(t.options)}
    if t.kind != "call":
        raise ValidationError(
            f"tests[{i}].kind", f"/v1/judge takes stdio, call and script tests, not {t.kind!r}"
        )
    options = {k: v for k, v in t.options.items() if k not in ("fn_name", "args")}
    extra = sorted(set(options) - CALL_OPTIONS)
    if extra:
        raise ValidationError(
            f"tests[{i}].options", f"/v1/judge cannot apply {', '.join(extra)} to a call test"
        )
    entry = {
        "kind": "call",
        "fn_name": t.options["fn_name"],
        "args": t.options["args"],
        "expected_value": t.expected_value,
        "options": options,
    }
    if not _json_faithful(entry):
        raise ValidationError(
            f"tests[{i}]", "holds values JSON cannot carry as they are (tuples, sets, bytes...)"
        )
    return entry


def _result(r: dict[str, Any]) -> RemoteResult:
    reward = r["reward"]
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, int | float)):
        raise TypeError(f"reward must be a number or null, got {reward!r}")
    return RemoteResult(
        str(r["verdict"] or r.get("outcome") or "remote_error"),
        None if reward is None else float(reward),
        int(r["passed"]),
        int(r["total"]),
        str(r.get("reason") or ""),
    )
