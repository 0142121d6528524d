"""Agent sessions on the cluster: each is a real :class:`~assay.sessions.Session` held by the
node agent of one node, and a :class:`RemoteSession` on the driver forwards every call to it.

``Session(ray_executor, ...)`` (and ``SessionManager(ray_executor)``, ``assay serve --ray``)
opens one on the node with the fewest sessions per slot, then the most free capacity. A
session is pinned to that node: its sandbox (processes, ``/work``, the interpreter of its
cells) lives there and nowhere else, and ``fork`` makes the child on the same node. When the
node dies (removed from the cluster, its agent killed) the session ends with the reason
``node_lost`` and every later call raises :class:`~assay.sessions.SessionEnded`: it is never
opened again elsewhere, empty.

Steps run on the hosting node as they come: they take no slot of the executor's global
queue (the session's own limits bind them, as they do on a ``Runner``). ``verify`` runs on
the driver as on one machine, with the workspace snapshot read from the session and the
hidden tests run in a fresh sandbox on the same node.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar, cast

from ... import defaults
from ...errors import AssayError, SandboxError, SessionEnded
from ...sandbox import RunRequest
from ...sessions import Download, DownloadTooLarge, _reaper
from ...sessions._base import SETTINGS, SessionBase
from ...sessions._download import Chunks
from ...sessions.session import Session
from ...sessions.types import ExecStep, StepResult
from ...sessions.verify import inherit
from ...types import ExecResult
from ._agent import SESSION_METHODS, SESSION_STEPS, SESSIONS
from ._nodes import Node

DOWNLOAD_MAX = defaults.SESSION_DOWNLOAD_MAX_BYTES

P = ParamSpec("P")
R = TypeVar("R")


class _Lost(Exception):
    """The node holding a session is gone: Ray says its agent or node died, or the
    executor's membership already declared it dead (the session ends ``node_lost``)."""


def _call(node: Node, method: str, *args: Any) -> Any:
    """One call on ``node``'s agent, in its sessions group: its value, or the error it
    raised (an Assay error as it is; another as :class:`SandboxError`). Raises
    :class:`_Lost` if the agent or its node is dead, :class:`SandboxError` if the node does
    not answer for now."""
    import ray
    from ray.exceptions import (
        ActorUnavailableError,
        NodeDiedError,
        ObjectLostError,
        RayActorError,
        RayTaskError,
    )

    if not node.alive:  # the executor's membership declared the node dead
        raise _Lost(f"node {node.name} left the cluster")
    remote = getattr(node.handle, method).options(concurrency_group=SESSIONS)
    try:
        return ray.get(remote.remote(*args))
    except RayTaskError as exc:  # the call ran and raised: its own error
        cause = exc.cause
        if isinstance(cause, AssayError):
            raise cause from None
        raise SandboxError(f"{type(cause).__name__}: {cause}"[:2000]) from None
    except ActorUnavailableError as exc:  # not dead (yet): the call may have run, or not
        raise SandboxError(f"node {node.name} did not answer: {exc}") from None
    except (RayActorError, NodeDiedError, ObjectLostError) as exc:
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        raise _Lost(f"node {node.name} died: {type(exc).__name__} {first}".strip()) from None


def _forwarded(method: Callable[P, R], step: bool = False) -> Callable[P, R]:
    """``Session.method`` of a :class:`RemoteSession`: the node's session runs it (a step
    counts as one here too). Same signature and documentation; the arguments are checked
    against that signature here, so a wrong one fails as it does on a local session."""
    name, signature = method.__name__, inspect.signature(method)

    @functools.wraps(method)
    def forward(*args: P.args, **kwargs: P.kwargs) -> R:
        signature.bind(*args, **kwargs)
        self, *rest = args
        assert isinstance(self, RemoteSession)
        call = self._remote_step if step else self._remote
        result: R = call("session_call", self.id, name, tuple(rest), kwargs)
        return result

    return forward


class RemoteSession(SessionBase):
    """The driver's handle on a session held by a node agent: a sibling of :class:`Session`
    (both are :class:`SessionBase`), the methods that act in the sandbox forwarded to the
    node's ``Session`` (see the end of the module).

    ``node_id`` / ``node_name`` say where it lives.
    """

    def __init__(
        self, source: Any, files: Mapping[str, str | bytes] | None = None, **kwargs: Any
    ) -> None:
        node = source._session_node()
        try:
            attrs = _call(node, "session_open", files, kwargs)
        except _Lost as exc:
            raise SandboxError(f"session not opened: {exc}") from None
        except SessionEnded as exc:
            raise SandboxError(
                f"session did not start: {exc.reason} {exc.detail}".strip()
            ) from None
        self._bind(source, node, attrs)

    def _bind(self, source: Any, node: Node, attrs: dict[str, Any]) -> None:
        self.source, self.node = source, node
        self.node_id, self.node_name = node.node_id, node.name
        self.id, self.episode_id = attrs["id"], attrs["episode_id"]
        for name in SETTINGS:  # what the node's session is (``Session.settings``)
            setattr(self, name, attrs[name])
        self.records, self.task_id = None, None  # the node's session is the one recorded
        self.created = self.last_used = time.monotonic()
        self.steps, self.busy = 0, False
        self.end_reason, self.end_detail, self.result = None, "", None
        self._on_end = []
        self._state = threading.Lock()
        self._step_s = 0.05
        self._execute = self._execute_there
        source._session_opened(self)
        _reaper.watch(self)

    # -- lifecycle --------------------------------------------------------------------------
    def _end(self, reason: str, detail: str) -> bool:
        with self._state:
            if self.end_reason is not None:
                return False
            self.end_reason, self.end_detail = reason, detail
            if self.result is None:  # the run's own result did not reach the driver
                self.result = ExecResult(status="sandbox_error", stderr=detail.encode())
        for fn in self._on_end:
            with contextlib.suppress(Exception):
                fn(self)
        return True

    def _lost(self, exc: _Lost) -> SessionEnded:
        """End here: the node holding the session is gone."""
        self._end("node_lost", str(exc))
        assert self.end_reason is not None
        return SessionEnded(self.id, self.end_reason, self.end_detail)

    def _ended(self, exc: SessionEnded) -> SessionEnded:
        """End here as the node's session did."""
        self._end(exc.reason, exc.detail)
        assert self.end_reason is not None
        return SessionEnded(self.id, self.end_reason, self.end_detail)

    def close(self) -> None:
        """End the session; when this returns its sandbox is gone from its node."""
        self.end("closed")

    def end(self, reason: str, detail: str = "") -> None:
        if self.end_reason is not None:
            return
        try:
            self.result = _call(self.node, "session_end", self.id, reason, detail)
        except _Lost as exc:
            self._lost(exc)
            return
        except SessionEnded as exc:
            self._ended(exc)
            return
        self._end(reason, detail)

    # -- calls ------------------------------------------------------------------------------
    def _remote(self, method: str, *args: Any) -> Any:
        """``method`` of the node's agent for this session (its value, or its error)."""
        if self.end_reason is not None:
            raise SessionEnded(self.id, self.end_reason, self.end_detail)
        self.busy = True
        try:
            return _call(self.node, method, *args)
        except _Lost as exc:
            raise self._lost(exc) from None
        except SessionEnded as exc:
            raise self._ended(exc) from None
        finally:
            self.busy = False
            self.last_used = time.monotonic()

    def _remote_step(self, method: str, *args: Any) -> Any:
        started = time.monotonic()
        try:
            return self._remote(method, *args)
        finally:
            self.steps += 1
            self._step_s = 0.8 * self._step_s + 0.2 * (time.monotonic() - started)

    def step(self, step: ExecStep) -> StepResult:
        """``Session.step`` on the node's session (the step was checked where it was made)."""
        result: StepResult = self._remote_step("session_step", self.id, step)
        return result

    def _execute_there(self, request: RunRequest) -> ExecResult:
        """One sandbox run on the hosting node (``verify``'s tests). The run's first passed
        fd (the report pipe) is stood in for by a pipe on the node; what the run wrote there
        is written to it here. Like ``Runner.execute``, this owns the passed fds."""
        fds = request.pass_fds
        try:
            bare = dataclasses.replace(request, pass_fds=(), stop_fd=-1)
            try:
                result, piped = _call(self.node, "session_execute", bare, bool(fds))
            except _Lost as exc:
                raise SandboxError(str(exc)) from None
            if fds:
                with contextlib.suppress(OSError), open(fds[0], "wb", closefd=False) as out:
                    out.write(piped)
            return cast(ExecResult, result)
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def open_file(self, path: str, max_bytes: int = DOWNLOAD_MAX) -> Download:
        """The file, fetched whole from its node (the driver holds it, up to the cap, while
        it is handed on: the pipe of a local session does not reach another machine)."""
        return _whole(path, self.read_file(path), max_bytes)

    def open_tar(
        self, directory: str = ".", gzip: bool = False, max_bytes: int = DOWNLOAD_MAX
    ) -> Download:
        """A tar of ``directory``, fetched whole from its node (as :meth:`open_file`)."""
        return _whole(directory, self.download_tar(directory, gzip), max_bytes)

    def fork(self, session_id: str | None = None) -> RemoteSession:
        """A new session on the same node with a copy of this one's workspace."""
        if self.end_reason is not None:
            raise SessionEnded(self.id, self.end_reason, self.end_detail)
        attrs = self._remote("session_fork", self.id, session_id)
        child = object.__new__(RemoteSession)
        child._bind(self.source, self.node, attrs)
        inherit(self, child)
        return child


def _whole(what: str, data: bytes, limit: int) -> Download:
    if len(data) > limit:
        raise DownloadTooLarge(what, len(data), limit)
    step = defaults.SESSION_DOWNLOAD_CHUNK_BYTES
    return Chunks(what, len(data), limit, lambda at: data[at : at + step])


# What a session does in its sandbox (run a step, read or write a file...) the node's
# session does: each method the agent takes calls for is forwarded, its signature the
# Session's (so the type checker sees RemoteSession's as Session's, which they are).
for _name in sorted(SESSION_METHODS):
    setattr(RemoteSession, _name, _forwarded(getattr(Session, _name), _name in SESSION_STEPS))
