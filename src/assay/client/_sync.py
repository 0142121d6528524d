"""The blocking client: ``SessionClient(url).session(...)`` is a ``Session`` on a server."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from .. import defaults
from ..sessions import (
    CellResult,
    EpisodeRewards,
    ExecStep,
    SessionEnded,
    SessionLimits,
    StepResult,
    VerifyResult,
)
from ..tasks import AgentTask
from . import _calls
from ._calls import STEP_TIMEOUT_S, Call
from ._http import Connections


class SessionClient:
    """A connection to an ``assay serve`` for agent sessions (one pooled HTTP/1.1 client;
    safe to share between threads). ``token``: the service's bearer token, if it has one.

    >>> with SessionClient("http://127.0.0.1:8080") as client:     # doctest: +SKIP
    ...     with client.session(files={"a.txt": "hi"}) as s:
    ...         s.exec("cat a.txt").stdout                           # b'hi'
    """

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self._headers = {"content-type": "application/json"}
        if token:
            self._headers["authorization"] = f"Bearer {token}"
        # ``timeout`` bounds connecting; each call has its own answer timeout (a step's is
        # its own timeout plus the service's margin).
        self._http = Connections(self.url, connect_timeout=min(10.0, timeout))

    def send(self, call: Call, session_id: str = "") -> Any:
        query = f"?{urlencode(call.params)}" if call.params else ""
        path = f"{call.path}{query}"
        if call.json is not None:
            body: bytes | None = json.dumps(call.json).encode()
            headers = self._headers
        else:
            body = call.content
            headers = {**self._headers, "content-type": "application/octet-stream"}
        status, data, answer_headers = self._http.request(
            call.method, path, body, headers, call.timeout
        )
        response = _calls.Answer(status, data, answer_headers, f"{self.url}{path}")
        _calls.raise_for(response, session_id)
        return call.parse(response)

    def session(
        self,
        files: Mapping[str, str | bytes] | None = None,
        *,
        limits: SessionLimits | None = None,
        ttl_s: float = defaults.SESSION_TTL_S,
        idle_ttl_s: float = defaults.SESSION_IDLE_TTL_S,
        tar: bytes | None = None,
        task: AgentTask | Mapping[str, Any] | None = None,
        gated: bool = False,
        image: str | None = None,
        priority: str = "normal",
        caller: str = "sessions",
        episode_id: str | None = None,
        loopback: bool = True,
    ) -> RemoteSession:
        """A new session on the server (``Session``'s arguments; ``task``: one to verify
        against, its workspace seeded from it)."""
        info = self.send(
            _calls.create(
                files,
                limits=limits,
                ttl_s=ttl_s,
                idle_ttl_s=idle_ttl_s,
                task=task,
                gated=gated,
                image=image,
                priority=priority,
                caller=caller,
                episode_id=episode_id,
                loopback=loopback,
            )
        )
        session = RemoteSession(self, info)
        if tar is not None:
            try:
                session.upload_tar(tar)
            except BaseException:
                session.close()
                raise
        return session

    def __enter__(self) -> SessionClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def close(self) -> None:
        """Close the connections (the sessions stay open on the server until closed)."""
        self._http.close()


class RemoteSession:
    """A session held by a server: ``Session``'s methods, with the same results."""

    def __init__(self, client: SessionClient, info: dict[str, Any]) -> None:
        self.client = client
        self.id = str(info["id"])
        self.episode_id = str(info.get("episode_id") or self.id)
        self.end_reason: str | None = None

    def _send(self, call: Call) -> Any:
        try:
            return self.client.send(call, self.id)
        except SessionEnded as exc:
            self.end_reason = exc.reason
            raise

    @property
    def ended(self) -> bool:
        return self.end_reason is not None

    def info(self) -> dict[str, Any]:
        found: dict[str, Any] = self._send(_calls.info(self.id))
        return found

    def exec(
        self,
        command: str,
        timeout_s: float = STEP_TIMEOUT_S,
        idle_timeout_s: float | None = None,
        stdin: str | bytes = b"",
    ) -> StepResult:
        data = stdin.encode() if isinstance(stdin, str) else stdin
        return self.step(ExecStep(command, timeout_s, idle_timeout_s, data))

    def step(self, step: ExecStep) -> StepResult:
        """``exec`` of a step already made (``Session.step``)."""
        result: StepResult = self._send(_calls.exec_(self.id, step))
        return result

    def run_cell(self, code: str, timeout_s: float = STEP_TIMEOUT_S) -> CellResult:
        cell: CellResult = self._send(_calls.run_cell(self.id, code, timeout_s))
        return cell

    def write_file(self, path: str, content: str | bytes) -> None:
        self._send(_calls.write_file(self.id, path, content))

    def read_file(self, path: str) -> bytes:
        data: bytes = self._send(_calls.read_file(self.id, path))
        return data

    def list_files(self, directory: str = ".") -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = self._send(_calls.list_files(self.id, directory))
        return entries

    def delete_file(self, path: str) -> None:
        self._send(_calls.delete_file(self.id, path))

    def download_tar(self, directory: str = ".", gzip: bool = False) -> bytes:
        data: bytes = self._send(_calls.download_tar(self.id, directory, gzip))
        return data

    def upload_tar(self, data: bytes, directory: str = ".") -> None:
        self._send(_calls.upload_tar(self.id, data, directory))

    def fork(self) -> RemoteSession:
        """A new session on the server with a copy of this one's workspace."""
        return RemoteSession(self.client, self._send(_calls.fork(self.id)))

    def verify(self, diagnosis: Mapping[str, Any] | None = None) -> VerifyResult:
        result: VerifyResult = self._send(_calls.verify(self.id, diagnosis))
        return result

    def episode_rewards(self) -> EpisodeRewards:
        rewards: EpisodeRewards = self._send(_calls.episode_rewards(self.id))
        return rewards

    def close(self) -> None:
        """End the session (a session that has ended already is left as it is)."""
        with contextlib.suppress(SessionEnded):
            self._send(_calls.close(self.id))
        self.end_reason = self.end_reason or "closed"

    def __enter__(self) -> RemoteSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
