"""The HTTP session API as calls: one ``Call`` per ``Session`` method, shared by the
blocking and the asyncio client (each only sends it), and the one way an error answer
becomes the exception ``Session`` itself raises.

A call names its method, path, body and how its answer becomes the value ``Session``'s own
method returns (``StepResult``, ``CellResult``, ``VerifyResult``, ...), so a remote session
and a local one give equal results for equal steps.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import quote

from .. import defaults
from ..errors import RemoteError, ValidationError
from ..sessions import (
    CellResult,
    EpisodeRewards,
    ExecStep,
    SessionEnded,
    SessionFault,
    SessionLimits,
    SessionRefused,
    StepResult,
    TooManySessions,
    VerifyResult,
)
from ..tasks import AgentTask

__all__ = ["Answer", "Call", "RemoteError", "create", "raise_for"]


@dataclass(frozen=True)
class Answer:
    """An HTTP answer as the calls read it (whatever client fetched it)."""

    status_code: int
    content: bytes
    headers: Mapping[str, str]  # lower-cased names
    url: str

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


@dataclass(frozen=True)
class Call:
    """One request of the session API and how its answer is read."""

    method: str
    path: str
    parse: Callable[[Answer], Any]
    json: dict[str, Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    content: bytes | None = None
    #: Seconds the answer may take (a step's own timeout plus the service's margin).
    timeout: float = 60.0


def raise_for(response: Answer, session_id: str = "") -> None:
    """The exception ``Session`` raises in the same case, for an error answer."""
    code = response.status_code
    if code < 400:
        return
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    message = str(body.get("message") or body.get("detail") or response.text[:500])
    if code == 410:
        raise SessionEnded(session_id, str(body.get("reason")), str(body.get("detail") or ""))
    if code == 404 and body.get("field") == "session":
        raise SessionEnded(session_id, "unknown", message)
    if code == 400 and body.get("field") == "path":
        raise SessionRefused(message.removeprefix("path: "))
    if code == 503 and "reason" in body:
        raise SessionFault(str(body["reason"]), message)
    if code == 429:  # no room for another session (or step) now: retry after the hint
        raise TooManySessions(message, 0, 0, float(response.headers.get("retry-after") or 1))
    if code in (400, 422) and isinstance(body.get("field"), str):
        raise ValidationError(body["field"], message)
    raise RemoteError(f"HTTP {code} from {response.url}: {message}")


def _json(response: Answer) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError as exc:
        raise RemoteError(f"not JSON from {response.url}: {exc}") from None
    if not isinstance(body, dict):
        raise RemoteError(f"not a JSON object from {response.url}")
    return body


def _known(cls: type, body: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in body.items() if k in names}


def _step(response: Answer) -> StepResult:
    body = _known(StepResult, _json(response))
    for stream in ("stdout", "stderr"):
        body[stream] = base64.b64decode(body.get(stream, ""))
    return StepResult(**body)


def _cell(response: Answer) -> CellResult:
    return CellResult(**_known(CellResult, _json(response)))


def _verify(response: Answer) -> VerifyResult:
    return VerifyResult(**_known(VerifyResult, _json(response)))


def _rewards(response: Answer) -> EpisodeRewards:
    return EpisodeRewards(**_known(EpisodeRewards, _json(response)))


def _quoted(path: str) -> str:
    """``path`` as one URL segment: ``..`` and ``/`` reach the agent as written (which
    refuses what leads out of /work), not resolved away by the URL's normalisation."""
    return quote(path.removeprefix("/work/"), safe="")


def _none(_response: Answer) -> None:
    return None


def _bytes(response: Answer) -> bytes:
    return response.content


def _entries(response: Answer) -> list[dict[str, Any]]:
    return list(_json(response).get("entries", []))


def create(
    files: Mapping[str, str | bytes] | None,
    *,
    limits: SessionLimits | None,
    ttl_s: float,
    idle_ttl_s: float,
    task: AgentTask | Mapping[str, Any] | None,
    gated: bool,
    image: str | None,
    priority: str,
    caller: str,
    episode_id: str | None,
    loopback: bool,
) -> Call:
    body: dict[str, Any] = {
        "files": {
            p: base64.b64encode(c.encode() if isinstance(c, str) else c).decode()
            for p, c in (files or {}).items()
        },
        "ttl_s": ttl_s,
        "idle_ttl_s": idle_ttl_s,
        "gated": gated,
        "image": image,
        "priority": priority,
        "caller": caller,
        "episode_id": episode_id,
        "loopback": loopback,
    }
    if limits is not None:
        body["limits"] = limits.to_dict()
    if task is not None:
        body["task"] = task.to_dict() if isinstance(task, AgentTask) else dict(task)
    return Call("POST", "/v1/sessions", _json, json=body, timeout=120.0)


def info(sid: str) -> Call:
    return Call("GET", f"/v1/sessions/{sid}", _json)


def exec_(sid: str, step: ExecStep) -> Call:
    body = {
        "command": step.command,
        "timeout_s": step.timeout_s,
        "idle_timeout_s": step.idle_timeout_s,
        "stdin": base64.b64encode(step.stdin).decode(),
        "stdin_encoding": "base64",
        "output_encoding": "base64",  # the exact bytes, as Session.exec gives them
    }
    return Call("POST", f"/v1/sessions/{sid}/exec", _step, json=body, timeout=step.timeout_s + 30)


def run_cell(sid: str, code: str, timeout_s: float) -> Call:
    body = {"code": code, "timeout_s": timeout_s}
    return Call("POST", f"/v1/sessions/{sid}/cell", _cell, json=body, timeout=timeout_s + 30)


def write_file(sid: str, path: str, content: str | bytes) -> Call:
    data = content.encode() if isinstance(content, str) else content
    return Call("PUT", f"/v1/sessions/{sid}/files/{_quoted(path)}", _none, content=data)


def read_file(sid: str, path: str) -> Call:
    return Call("GET", f"/v1/sessions/{sid}/files/{_quoted(path)}", _bytes)


def list_files(sid: str, directory: str) -> Call:
    return Call("GET", f"/v1/sessions/{sid}/files", _entries, params={"dir": directory})


def delete_file(sid: str, path: str) -> Call:
    return Call("DELETE", f"/v1/sessions/{sid}/files/{_quoted(path)}", _none)


def download_tar(sid: str, directory: str, gzip: bool) -> Call:
    params = {"dir": directory, "gzip": gzip}
    return Call("GET", f"/v1/sessions/{sid}/tar", _bytes, params=params)


def upload_tar(sid: str, data: bytes, directory: str) -> Call:
    return Call("PUT", f"/v1/sessions/{sid}/tar", _none, params={"dir": directory}, content=data)


def fork(sid: str) -> Call:
    return Call("POST", f"/v1/sessions/{sid}/fork", _json, timeout=120.0)


def verify(sid: str, diagnosis: Mapping[str, Any] | None) -> Call:
    body = {"diagnosis": dict(diagnosis) if diagnosis is not None else None}
    return Call("POST", f"/v1/sessions/{sid}/verify", _verify, json=body, timeout=600.0)


def episode_rewards(sid: str) -> Call:
    return Call("GET", f"/v1/sessions/{sid}/rewards", _rewards)


def close(sid: str) -> Call:
    return Call("DELETE", f"/v1/sessions/{sid}", _none)


#: The default step timeout, as ``Session``'s.
STEP_TIMEOUT_S = defaults.SESSION_STEP_TIMEOUT_S
