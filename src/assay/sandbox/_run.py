"""Supervising one run from the trusted side: pipes, CPU and wall clocks, kill, verdict."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import defaults
from ..types import ExecResult, Limits, Status
from ._inside import wire
from .cgroups import RunCgroup

Mode = Literal["python", "exec"]
KillReason = Literal["time", "wall", "output", "cancel"]


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One process to run: the sandbox layer's whole input (it knows nothing of tests)."""

    mode: Mode
    argv: list[str]
    files: list[tuple[str, bytes, int]] = field(default_factory=list)
    stdin: bytes = b""
    limits: Limits = field(default_factory=Limits)
    collect: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=lambda: dict(defaults.SANDBOX_ENV))


@dataclass
class _Capture:
    cap: int
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    truncated: bool = False
    eof: bool = False

    def add(self, data: bytes) -> bool:
        """Append; True when the cap is exceeded."""
        room = self.cap - self.size
        if len(data) > room:
            if room > 0:
                self.chunks.append(data[:room])
                self.size += room
            self.truncated = True
            return True
        self.chunks.append(data)
        self.size += len(data)
        return False

    def value(self) -> bytes:
        return b"".join(self.chunks)


class Supervision:
    """State of one run; :meth:`wait` drives it to an :class:`ExecResult`."""

    def __init__(self, req: RunRequest, cgroup: RunCgroup | None, ncpu: int) -> None:
        self.req = req
        self.cg = cgroup
        self.ncpu = max(1, ncpu)
        self.started = time.monotonic()
        self.kill_reason: KillReason | None = None
        self.pidfd: int | None = None
        self.exit_record: dict[str, Any] | None = None
        self.error: str | None = None
        self.collected: dict[str, bytes] = {}
        cap = req.limits.output_bytes
        self.out = _Capture(cap)
        self.err = _Capture(cap)

    def kill(self, reason: KillReason, fallback: Any = None) -> None:
        if self.kill_reason is None:
            self.kill_reason = reason
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        elif fallback is not None:
            fallback()
        if self.cg is not None:
            with contextlib.suppress(OSError):
                self.cg.kill_all()

    def wait(
        self, status_sock: socket.socket, out_fd: int, err_fd: int, kill_fallback: Any
    ) -> ExecResult:
        limits = self.req.limits
        wall_limit = limits.effective_wall_s
        sel = selectors.DefaultSelector()
        sel.register(out_fd, selectors.EVENT_READ, self.out)
        sel.register(err_fd, selectors.EVENT_READ, self.err)
        sel.register(status_sock, selectors.EVENT_READ, "status")
        status_open = True
        finished = False
        cpu_used = 0.0
        next_cpu_check = self.started
        try:
            while status_open or not (self.out.eof and self.err.eof):
                now = time.monotonic()
                if self.kill_reason is None and not finished:
                    if now - self.started > wall_limit:
                        self.kill("wall", kill_fallback)
                    elif self.cg is not None and now >= next_cpu_check:
                        cpu_used = self.cg.cpu_seconds()
                        if cpu_used > limits.time_s:
                            self.kill("time", kill_fallback)
                        # CPU can grow at most ncpu seconds per wall second: sleep until the
                        # earliest moment the limit could be crossed.
                        remaining = (limits.time_s - cpu_used) / self.ncpu
                        next_cpu_check = now + min(max(remaining, 0.002), defaults.CPU_POLL_MAX_S)
                timeout = max(0.0, min(next_cpu_check, self.started + wall_limit) - now)
                if self.kill_reason is not None or finished:
                    timeout = 0.2  # only draining now
                events = sel.select(timeout if timeout > 0 else 0.001)
                if not events and (self.kill_reason is not None or finished):
                    if time.monotonic() - self.started > wall_limit + 10:
                        self.error = self.error or "run did not terminate after kill"
                        break
                for key, _ in events:
                    if key.data == "status":
                        if not self._on_status(status_sock):
                            status_open = False
                            sel.unregister(status_sock)
                            finished = True
                        continue
                    capture: _Capture = key.data
                    try:
                        data = os.read(key.fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not data:
                        capture.eof = True
                        sel.unregister(key.fd)
                        continue
                    if capture.add(data) and self.kill_reason is None and not finished:
                        self.kill("output", kill_fallback)
                    elif capture.truncated:
                        pass
        finally:
            sel.close()
        self._wait_pidfd()
        return self._result()

    def _on_status(self, sock: socket.socket) -> bool:
        try:
            msg, fds = wire.recv(sock)
        except (OSError, ValueError) as exc:
            self.error = f"status channel: {exc}"
            return False
        if msg is None:
            return False
        kind = msg.get("kind")
        if kind == "started" and fds:
            self.pidfd = fds[0]
            for fd in fds[1:]:
                os.close(fd)
            if self.kill_reason is not None:  # killed before we could aim
                self.kill(self.kill_reason)
        elif kind == "exit":
            self.exit_record = msg
            for fd in fds:
                try:
                    self.collected = {p: c for p, c, _m in wire.unpack_files(fd)}
                finally:
                    os.close(fd)
        elif kind == "error":
            self.error = f"sandbox {msg.get('stage')} failed: {msg.get('message')}"
            for fd in fds:
                os.close(fd)
        return True

    def _wait_pidfd(self) -> None:
        """Wait until the run's init is gone, which means its whole PID namespace is gone."""
        if self.pidfd is None:
            return
        try:
            sel = selectors.DefaultSelector()
            sel.register(self.pidfd, selectors.EVENT_READ)
            if not sel.select(5.0):
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                sel.select(5.0)
            sel.close()
        finally:
            os.close(self.pidfd)
            self.pidfd = None

    def _result(self) -> ExecResult:
        wall = time.monotonic() - self.started
        rec = self.exit_record or {}
        cpu = 0.0
        peak = 0
        oom = False
        if self.cg is not None:
            with contextlib.suppress(OSError, ValueError):
                cpu = self.cg.cpu_seconds()
                peak = self.cg.peak_memory_bytes()
                oom = self.cg.oom_killed()
        else:
            cpu = float(rec.get("cpu_s", 0.0))
            peak = int(rec.get("maxrss_bytes", 0))
        exit_code = rec.get("exit_code")
        sig = rec.get("signal")
        status = self._status(rec, cpu, oom, sig, exit_code)
        return ExecResult(
            status=status,
            exit_code=exit_code,
            signal=sig,
            stdout=self.out.value(),
            stderr=self.err.value() if status != "sandbox_error" else self._error_stderr(),
            stdout_truncated=self.out.truncated,
            stderr_truncated=self.err.truncated,
            cpu_s=cpu,
            wall_s=wall,
            peak_memory_bytes=peak,
            files=self.collected,
        )

    def _error_stderr(self) -> bytes:
        msg = (self.error or "sandbox failed").encode()
        return msg + b"\n" + self.err.value()

    def _status(
        self, rec: dict[str, Any], cpu: float, oom: bool, sig: int | None, code: int | None
    ) -> Status:
        limits = self.req.limits
        if self.kill_reason == "output":
            return "output_limit"
        if self.kill_reason == "time" or (rec and cpu > limits.time_s):
            return "time_limit"
        if self.kill_reason == "wall":
            return "time_limit"
        if self.error is not None or not rec:
            return "sandbox_error"
        if oom:
            return "memory_limit"
        if sig in (signal.SIGXCPU,):
            return "time_limit"
        if sig == signal.SIGXFSZ:
            return "output_limit"
        if sig is not None or (code is not None and code != 0):
            return "runtime_error"
        return "ok"
