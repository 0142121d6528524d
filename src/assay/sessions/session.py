"""A session: one long sandbox run whose program is the session agent.

Every control of a judged run applies (namespaces, a per-slot uid, seccomp, Landlock, the
run's cgroup): the session *is* one sandbox run, with the session's limits as the run's
(total CPU as ``time_s``, the TTL as the wall limit). Closing it stops the run, and the
sandbox takes everything with it: processes, the tmpfs holding /work, the cgroup.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import defaults
from ..errors import SandboxError, SessionEnded, SessionFault, ValidationError
from ..runner import Runner
from ..sandbox import RunRequest
from ..scheduler import NORMAL
from ..types import ExecResult, Isolation, Placement
from . import _reaper, _records
from . import verify as verification
from ._agentfile import agent_file, inside_file
from ._args import KERNEL, check_time, exec_message, step_cost, user_files, work_path
from ._base import SETTINGS, SessionBase
from ._channel import Channel, ChannelBroken
from ._download import Download, file_download, tar_download
from ._fork import fork_via_pipe
from ._replies import cell_result, not_started, refusal, step_result
from ._request import agent_request
from ._source import capabilities_of, held_runner
from .types import CellResult, ExecStep, SessionLimits, StepResult

if TYPE_CHECKING:
    from ..tasks import AgentTask

DOWNLOAD_MAX = defaults.SESSION_DOWNLOAD_MAX_BYTES
__all__ = ["SETTINGS", "Session", "open_session"]


class Session(SessionBase):
    """An isolated sandbox whose workspace (/work) and processes live from create to close.

    >>> with Session(runner, files={"a.txt": "hi"}) as s:          # doctest: +SKIP
    ...     s.exec("cd sub 2>/dev/null || mkdir sub && cd sub; export X=1")
    ...     s.exec("pwd; echo $X").stdout                          # b'/work/sub\\n1\\n'
    """

    def __new__(cls, source: object = None, *args: Any, **kwargs: Any) -> Any:
        # ``Session(ray_executor, ...)`` (documented before ``open_session``) opens the
        # executor's own kind of session, a sibling: ``__init__`` is then not called here.
        opener = getattr(source, "open_session", None)
        if cls is Session and callable(opener):
            return opener(*args, **kwargs)
        return object.__new__(cls)

    def __init__(
        self,
        source: object,
        files: Mapping[str, str | bytes] | None = None,
        *,
        limits: SessionLimits | None = None,
        ttl_s: float = defaults.SESSION_TTL_S,
        idle_ttl_s: float = defaults.SESSION_IDLE_TTL_S,
        tar: bytes | None = None,
        session_id: str | None = None,
        priority: int = NORMAL,
        caller: str = "sessions",
        image: str | None = None,
        loopback: bool = True,
        episode_id: str | None = None,
        isolation: Isolation | None = None,
    ) -> None:
        self.source = source
        #: What the source can do (``_source.Capabilities``), found out once here.
        self.capabilities = can = capabilities_of(source)
        #: Where the session's steps and verifications are recorded (its executor's writer).
        self.records = can.records
        self._execute = can.execute
        # On an executor, steps take one of its slots in the queue's order (``priority``,
        # fair shares between callers); on a Runner or Sandbox they run on the caller's thread.
        self._slot_call = can.slot_call
        if isinstance(priority, bool) or not isinstance(priority, int) or priority < 0:
            raise ValidationError("priority", f"must be a non-negative integer, got {priority!r}")
        if not isinstance(caller, str) or not caller:
            raise ValidationError("caller", "must be a non-empty string")
        self.priority, self.caller = priority, caller
        self._step_s = 0.05  # a running estimate of a step's CPU seconds (``step_cost``)
        self.limits = limits or SessionLimits()
        if not isinstance(self.limits, SessionLimits):
            raise ValidationError("limits", "must be a SessionLimits")
        self.ttl_s = check_time("ttl_s", ttl_s)
        self.idle_ttl_s = check_time("idle_ttl_s", idle_ttl_s)
        placement = Placement(image, isolation)  # checked here; ``placement`` derives it
        self.image, self.isolation = image, isolation
        #: Whether the session's own network namespace has ``lo`` up (127.0.0.1 reaches
        #: servers inside this session only; nothing outside it is reachable either way).
        self.loopback = bool(loopback)
        runner, release = held_runner(can.runner, placement)
        if runner is not None and placement != Placement():
            self._execute = runner.execute
        self._pipes = not (runner is not None and runner.isolation == "gvisor")
        self.id = session_id or secrets.token_hex(16)  # 128 bits: an id cannot be guessed
        #: The episode its records belong to (the caller's, or the session's own id), and
        #: the task it verifies against, if any.
        self.episode_id = episode_id or self.id
        self.task_id: str | None = None
        self.created = time.monotonic()
        self.last_used = self.created
        self.steps = 0
        self.busy = False
        self.end_reason: str | None = None
        self.end_detail = ""
        self.result: ExecResult | None = None
        self._on_end: list[Callable[[SessionBase], None]] = []
        if release is not None:
            done = release
            self._on_end.append(lambda _session: done())
        self._call_lock = threading.Lock()
        # Steps of one session wait for each other here, on their callers' threads: a step
        # queued behind its own session's step would hold an executor slot doing nothing.
        self._step_lock = threading.Lock()
        self._state = threading.Lock()
        seeded = user_files(files)
        host, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._stop_r, self._stop_w = os.pipe2(os.O_CLOEXEC)
        self._channel = Channel(host)
        lim = self.limits
        agent_name, agent = agent_file(runner if isinstance(runner, Runner) else None)
        req = agent_request(
            lim,
            self.ttl_s,
            [(agent_name, agent, 0o444), (KERNEL, inside_file("kernel.py"), 0o444), *seeded],
            inside.detach(),
            self._stop_r,
            self.loopback,
        )
        self._thread = threading.Thread(
            target=self._run, args=(req,), daemon=True, name=f"assay-session-{self.id}"
        )
        self._thread.start()
        try:
            hello, _ = self._channel.recv(defaults.SESSION_START_TIMEOUT_S)
            if hello.get("ready") is not True:
                raise ChannelBroken(f"unexpected greeting {hello!r}")
        except ChannelBroken as exc:
            self._end("crashed", f"agent did not start: {exc}")
            self._finish()
            res = self.result
            why = f"{res.status}: {res.stderr[-500:].decode(errors='replace')}" if res else ""
            raise SandboxError(f"session {self.id} did not start ({exc}) {why}") from None
        if tar is not None:
            try:
                self.upload_tar(tar)
            except BaseException:
                self.close()
                raise
        _reaper.watch(self)

    # -- lifecycle --------------------------------------------------------------------------
    def _run(self, req: RunRequest) -> None:
        try:
            result = self._execute(req)
        except BaseException as exc:  # reported as the session's end
            result = ExecResult(status="sandbox_error", stderr=str(exc).encode())
        self.result = result
        if result.status == "time_limit":
            reason = "cpu_limit" if result.cpu_s >= self.limits.cpu_s else "ttl"
            self._end(reason, "")
        elif result.status == "memory_limit":
            self._end("memory_limit", f"peak {result.peak_memory_bytes >> 20} MiB")
        else:
            detail = f"sandbox run ended: {result.status}"
            if result.status == "sandbox_error":
                detail += f" ({result.stderr[-300:].decode(errors='replace').strip()})"
            self._end("crashed", detail)

    def _end(self, reason: str, detail: str) -> bool:
        """Record why the session ends (the first reason wins) and stop its run."""
        with self._state:
            if self.end_reason is not None:
                return False
            self.end_reason, self.end_detail = reason, detail
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")
        for fn in self._on_end:
            with contextlib.suppress(Exception):
                fn(self)
        return True

    def _finish(self) -> None:
        """Wait until the run is over: its processes, tmpfs and cgroup are gone."""
        self._thread.join()
        with self._state:
            fds, self._stop_r, self._stop_w = (self._stop_r, self._stop_w), -1, -1
        for fd in fds:
            if fd >= 0:
                os.close(fd)
        self._channel.close()

    def close(self) -> None:
        """End the session; when this returns, nothing of it is left on the host."""
        self._end("closed", "")
        if self._thread.is_alive() or self._stop_w >= 0:
            self._finish()

    def end(self, reason: str, detail: str = "") -> None:
        """End the session for ``reason`` (the reaper's way: ``ttl``, ``idle_ttl``)."""
        self._end(reason, detail)
        self._finish()

    # -- calls ------------------------------------------------------------------------------
    def _call(
        self,
        msg: dict[str, Any],
        payload: bytes = b"",
        timeout: float = defaults.SESSION_CALL_TIMEOUT_S,
        fd: int = -1,
    ) -> tuple[dict[str, Any], bytes]:
        """One request and its reply; ``fd`` (owned by the call from here on: it is closed
        once sent, or if it cannot be) goes to the agent with the request."""
        owned = [fd] if fd >= 0 else []
        try:
            return self._call_locked(msg, payload, timeout, owned)
        finally:
            for left in owned:
                with contextlib.suppress(OSError):
                    os.close(left)

    def _call_locked(
        self, msg: dict[str, Any], payload: bytes, timeout: float, owned: list[int]
    ) -> tuple[dict[str, Any], bytes]:
        with self._call_lock:
            if self.end_reason is not None:
                raise SessionEnded(self.id, self.end_reason, self.end_detail)
            self.busy = True
            try:
                self._channel.send(msg, payload, timeout, owned[0] if owned else -1)
                if owned:
                    os.close(owned.pop())  # the agent has its copy: ours would hold the pipe open
                reply, data = self._channel.recv(timeout)
            except ChannelBroken as exc:
                raise self._broken(exc) from None
            finally:
                self.busy = False
                self.last_used = time.monotonic()
        return self._checked(reply), data

    def _broken(self, exc: ChannelBroken) -> SessionEnded:
        """End the session whose agent stopped answering; the error to raise (blocks up to
        a second: the run may have just ended, and its reason (TTL, CPU, memory) comes first)."""
        self._thread.join(1.0)
        self._end("crashed", f"agent stopped answering: {exc}")
        self._finish()
        assert self.end_reason is not None
        return SessionEnded(self.id, self.end_reason, self.end_detail)

    def _checked(self, reply: dict[str, Any]) -> dict[str, Any]:
        """``reply`` if the agent did what was asked, else the refusal or fault raised."""
        if not reply.get("ok"):
            fault = refusal(reply)  # raises SessionRefused if the request was refused
            if fault.kind == "pids_limit":  # nothing left to free: the session is unusable
                self.end("pids_limit", str(fault))
            raise fault
        return reply

    def _step(self, msg: dict[str, Any], timeout: float) -> tuple[dict[str, Any], bytes]:
        """A step: on an executor it waits for its turn and a step slot (held while it runs,
        never a batch worker; an idle session holds none); it counts in ``steps``."""

        def run() -> tuple[dict[str, Any], bytes]:
            started = time.monotonic()
            reply: tuple[dict[str, Any], bytes] = ({}, b"")
            try:
                reply = self._call(msg, timeout=timeout)
                return reply
            finally:
                self._count_step(reply[0], started)

        if self._slot_call is None:
            return run()
        with self._step_lock:
            self.busy = True  # waiting for a slot is not idle: the reaper must leave it
            try:
                out: tuple[dict[str, Any], bytes] = self._slot_call(
                    run,
                    priority=self.priority,
                    caller=self.caller,
                    estimate_s=self._step_s,
                    memory_mb=self.limits.memory_mb,
                )
            finally:
                self.busy = False
                self.last_used = time.monotonic()
        return out

    def _count_step(self, reply: dict[str, Any], started: float) -> None:
        self.steps += 1
        cost = step_cost(reply.get("cpu_s"), time.monotonic() - started)
        self._step_s = 0.8 * self._step_s + 0.2 * cost

    def step(self, step: ExecStep) -> StepResult:
        """``exec`` of a step already made (and so checked): the one door every caller of a
        shell step goes through (the HTTP route, a Ray node's agent, ``exec``)."""
        msg = exec_message(self.limits, step)
        started = time.time()
        reply: dict[str, Any] | SessionFault
        try:
            reply, _ = self._step(msg, step.timeout_s + defaults.SESSION_REPLY_GRACE_S)
        except SessionFault as fault:
            reply = fault
        except (ValueError, TypeError) as exc:
            raise self._malformed(exc) from None
        return self._stepped(reply, msg, started)

    def _stepped(
        self, reply: dict[str, Any] | SessionFault, msg: dict[str, Any], started: float
    ) -> StepResult:
        """The step's result from the agent's reply (or the fault that kept it from
        starting), recorded."""
        try:
            step = not_started(reply) if isinstance(reply, SessionFault) else step_result(reply)
        except (ValueError, TypeError) as exc:
            raise self._malformed(exc) from None
        _records.write(
            self,
            "session_step",
            msg["command"],
            started,
            {**step.to_dict(), "timeout_s": msg["timeout_s"]},
        )
        return step

    def _malformed(self, exc: Exception) -> SessionEnded:
        self.end("crashed", f"malformed step reply: {exc}")
        return SessionEnded(self.id, "crashed", self.end_detail)

    def write_file(self, path: str, content: str | bytes, mode: int = 0o644) -> None:
        data = content.encode() if isinstance(content, str) else content
        if not isinstance(data, bytes):
            raise ValidationError("content", "must be str or bytes")
        if not isinstance(mode, int) or not 0 <= mode <= 0o777:
            raise ValidationError("mode", "must be a permission number like 0o644")
        self._call({"op": "write", "path": work_path(path), "mode": mode}, data)

    def read_file(self, path: str) -> bytes:
        return self._call({"op": "read", "path": work_path(path)})[1]

    def list_files(self, directory: str = ".") -> list[dict[str, Any]]:
        entries = self._call({"op": "list", "dir": work_path(directory, allow_root=True)})[0]
        return list(entries.get("entries", []))

    def delete_file(self, path: str) -> None:
        self._call({"op": "delete", "path": work_path(path)})

    def download_tar(
        self, directory: str = ".", gzip: bool = False, exclude: tuple[str, ...] = ()
    ) -> bytes:
        """A tar of ``directory`` (default: the whole workspace), without the entries of
        ``directory`` named in ``exclude`` (verification leaves out ``.git``)."""
        msg = {
            "op": "tar",
            "dir": work_path(directory, allow_root=True),
            "gzip": gzip,
            "exclude": list(exclude),
        }
        return self._call(msg)[1]

    def open_file(self, path: str, max_bytes: int = DOWNLOAD_MAX) -> Download:
        """``path``'s bytes as chunks with bounded memory (``sessions._download``)."""
        return file_download(self._call, work_path(path), max_bytes, self._pipes)

    def open_tar(
        self, directory: str = ".", gzip: bool = False, max_bytes: int = DOWNLOAD_MAX
    ) -> Download:
        """A tar of ``directory`` as chunks with bounded memory (``sessions._download``)."""
        return tar_download(self._call, work_path(directory, True), gzip, max_bytes, self._pipes)

    def upload_tar(self, data: bytes, directory: str = ".") -> None:
        """Unpack a tar (regular files and directories only) into ``directory``."""
        if not isinstance(data, bytes):
            raise ValidationError("tar", "must be bytes")
        self._call({"op": "untar", "dir": work_path(directory, allow_root=True)}, data)

    def run_cell(self, code: str, timeout_s: float = defaults.SESSION_STEP_TIMEOUT_S) -> CellResult:
        """Run Python ``code`` in the session's persistent interpreter (its variables carry
        over from cell to cell; a cell past its timeout restarts the interpreter)."""
        if not isinstance(code, str):
            raise ValidationError("code", "must be a string")
        timeout = check_time("timeout_s", timeout_s)
        msg = {"op": "cell", "code": code, "timeout_s": timeout}
        started = time.time()
        cell = cell_result(self._step(msg, timeout + defaults.SESSION_REPLY_GRACE_S)[0])
        out = {"stdout": cell.stdout, "stderr": cell.stderr, "reason": cell.detail}
        _records.write(self, "session_cell", code, started, {**out, "verdict": cell.status})
        return cell

    def ping(self) -> None:
        self._call({"op": "ping"}, timeout=10.0)

    def fork(self, session_id: str | None = None) -> Session:
        """A new session with a copy of this one's workspace (files only: running processes,
        the shell's cwd and variables, and the Python interpreter's state are not copied)."""
        child = fork_via_pipe(
            pack=lambda fd: self._call({"op": "send_tree", "dir": "."}, fd=fd),
            start=lambda: Session(self.source, session_id=session_id, **self.settings()),
            unpack=lambda child, fd: child._call({"op": "receive_tree", "dir": "."}, fd=fd),
            discard=Session.close,
        )
        verification.inherit(self, child)  # a fork verifies against its parent's task and history
        child.task_id = self.task_id
        return child

    @classmethod
    def for_task(cls, source: object, task: AgentTask, **kwargs: Any) -> SessionBase:
        """A session seeded with an ``AgentTask``'s workspace (see ``assay.sessions.verify``)."""
        session = verification.start(open_session, source, task, **kwargs)
        session.task_id = task.task_id
        return session


def open_session(
    source: object, files: Mapping[str, str | bytes] | None = None, **kwargs: Any
) -> SessionBase:
    """A new session on ``source`` (``Session``'s arguments): a :class:`Session` on a
    ``Runner``, ``LocalExecutor`` or ``Sandbox``; on an executor whose sandboxes are on
    other machines (``RayExecutor``), the session it opens there (``source.open_session``)."""
    opener = getattr(source, "open_session", None)
    if callable(opener):
        found: SessionBase = opener(files, **kwargs)
        return found
    return Session(source, files, **kwargs)
