"""The session agent: the program of a session's sandbox run (stdlib only).

It answers newline-delimited JSON requests from the trusted side on fd 3 (a socket), one at
a time (file contents follow a line as ``nbytes`` raw bytes): ``exec`` (a shell step), ``write``/``read``/``list``/``delete`` (files under /work),
``tar``/``untar`` (a tree), ``cell`` (Python code in a persistent interpreter) and ``ping``.
Everything it says is untrusted data to the other side: it runs as the sandbox's user,
inside every control of the sandbox, and the session's limits are enforced from outside.

Shell state (cwd, exported variables) carries over from step to step: each step is a fresh
``bash`` in its own process group that starts in the cwd the previous step ended in, with
the variables it had exported, and saves both when it exits. A step stopped by a timeout
saves nothing (its changes to cwd and variables are lost, its files are not).
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import resource
import select
import signal
import socket
import sys
import threading
import time
from typing import Any

from .procs import GUARD, Fault, exhausted, kill_group, most_cpu
from .workspace import WORK, Conn, Refused, workspace_op

STATE = "/tmp/.assay-session"
NCPU = max(1, os.cpu_count() or 1)
CHUNK = 1 << 16
SHELL = "/bin/bash"
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "PYTHONUNBUFFERED": "1",
}
#: Saves the step's cwd and exported variables when its shell exits (builtins only: no
#: process is started for it); the agent keeps them only if the step was not stopped.
TRAILER = (
    "trap '__assay_rc=$?; pwd > " + STATE + "/cwd.new; export -p > " + STATE + "/env.new; "
    "exit $__assay_rc' EXIT\n"
)
PREAMBLE = (
    "{ read -r __assay_d < " + STATE + '/cwd && cd -- "$__assay_d"; } 2>/dev/null\n'
    "unset __assay_d\n"
    "[ -f " + STATE + "/env ] && . " + STATE + "/env\n"
)


class Step:
    """One shell step: run, watch output and the clocks, stop the group on a timeout."""

    def __init__(self, req: dict[str, Any]) -> None:
        self.command = str(req["command"])
        self.timeout = float(req["timeout_s"])
        idle = req.get("idle_timeout_s")
        self.idle = float(idle) if idle else None
        self.cap = int(req.get("output_bytes") or 1 << 20)
        cpu, mem = req.get("cpu_s"), req.get("memory_mb")
        self.cpu = max(1, math.ceil(float(cpu))) if cpu else None  # RLIMIT_CPU is in seconds
        self.memory = int(mem) << 20 if mem else None
        self.stdin = base64.b64decode(req.get("stdin") or "")

    def run(self) -> dict[str, Any]:
        script = self._script()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe()
        env = dict(BASE_ENV)
        start = time.monotonic()
        try:
            pid = GUARD.fork()
        except BlockingIOError:
            for fd in (out_r, out_w, err_r, err_w, in_r, in_w):
                os.close(fd)
            raise Fault(
                "pids_limit",
                f"the step could not start: the session is at its limit of {GUARD.limit} "
                "processes, and killing what earlier steps left running did not free one",
            ) from None
        if pid == 0:  # the step: its own process group, fds 0-2 only
            try:
                os.setsid()
                os.dup2(in_r, 0)
                os.dup2(out_w, 1)
                os.dup2(err_w, 2)
                os.closerange(3, 1 << 16)
                if self.cpu is not None:  # SIGXCPU at the limit, SIGKILL a second later
                    resource.setrlimit(resource.RLIMIT_CPU, (self.cpu, self.cpu + 1))
                if self.memory is not None:
                    resource.setrlimit(resource.RLIMIT_DATA, (self.memory, self.memory))
                os.execve(SHELL, [SHELL, "--noprofile", "--norc", "-c", script], env)
            finally:
                os._exit(127)
        for fd in (out_w, err_w, in_r):
            os.close(fd)
        feeder = None
        if self.stdin:
            feeder = threading.Thread(target=_feed, args=(in_w, self.stdin), daemon=True)
            feeder.start()
        else:
            os.close(in_w)
        outs = {out_r: bytearray(), err_r: bytearray()}
        truncated = {out_r: False, err_r: False}
        poller = select.poll()
        for fd in outs:
            poller.register(fd, select.POLLIN)
        waiter = None
        try:
            pidfd = os.pidfd_open(pid)
            poller.register(pidfd, select.POLLIN)
        except (OSError, AttributeError):  # the sandbox's filter refuses pidfd_open
            pidfd = -1
            waiter = Waiter.start(pid)
            if waiter is not None:
                poller.register(waiter.fd, select.POLLIN)
        last_output = start
        reason = None
        status = None
        # The step's CPU limit is RLIMIT_CPU, set before its shell starts and inherited by
        # every process it forks; where the kernel does not arm it in a forked process
        # (gVisor's, up to at least release 20221219: a step's `python3 -c 'while True:
        # pass'` ran to its wall timeout), the agent kills the group when one of its
        # processes is past the hard limit (soft + 1 s, where the host kernel's SIGKILL
        # comes), reading their CPU when one could first be there.
        hard = self.cpu + 1 if self.cpu is not None else None
        next_cpu = start + hard / NCPU if hard is not None else math.inf
        seen_cpu = 0.0  # the most CPU one of its processes was seen to use
        while status is None:
            now = time.monotonic()
            deadline = start + self.timeout
            if self.idle is not None:
                deadline = min(deadline, last_output + self.idle)
            if now >= deadline:
                reason = "timeout" if now >= start + self.timeout else "idle_timeout"
            elif hard is not None and now >= next_cpu:
                used = seen_cpu = most_cpu(pid)
                if used >= hard:
                    reason = "cpu_limit"
                next_cpu = now + min(max((hard - used) / NCPU, 0.05), 0.5)
            if reason is not None:
                kill_group(pid)
                _, status, usage = waiter.join() if waiter else os.wait4(pid, 0)
                break
            wait_ms = max(1, int((min(deadline, next_cpu) - now) * 1000) + 1)
            if pidfd < 0 and waiter is None:
                wait_ms = min(wait_ms, 5)
            for fd, _ev in poller.poll(wait_ms):
                if fd == pidfd or (waiter is not None and fd == waiter.fd):
                    continue
                data = os.read(fd, CHUNK)
                if not data:
                    poller.unregister(fd)
                    continue
                last_output = time.monotonic()
                buf = outs[fd]
                room = self.cap - len(buf)
                if len(data) > room:
                    truncated[fd] = True
                buf += data[: max(room, 0)]
            got, st, usage = waiter.poll() if waiter else os.wait4(pid, os.WNOHANG)
            if got == pid:
                status = st
        wall = time.monotonic() - start
        if reason is None:
            GUARD.left(pid)  # its background processes, if any, live on past the step
        # Whatever is already in the pipes belongs to the step; a background process that
        # keeps them open is drained on a thread (its later output is discarded).
        for fd, buf in outs.items():
            os.set_blocking(fd, False)
            try:
                while True:
                    data = os.read(fd, CHUNK)
                    if not data:
                        os.close(fd)
                        break
                    room = self.cap - len(buf)
                    truncated[fd] = truncated[fd] or len(data) > room
                    buf += data[: max(room, 0)]
            except BlockingIOError:
                os.set_blocking(fd, True)
                try:
                    threading.Thread(target=_drain, args=(fd,), daemon=True).start()
                except RuntimeError:  # no thread left under the pids limit: stop reading
                    os.close(fd)
        if pidfd >= 0:
            os.close(pidfd)
        if waiter is not None:
            waiter.close()
        if feeder is not None:
            feeder.join(0.1)
        for name in ("cwd", "env"):
            new = f"{STATE}/{name}.new"
            try:
                if reason is None:
                    os.replace(new, f"{STATE}/{name}")
                else:
                    os.unlink(new)
            except OSError:
                pass
        code = os.waitstatus_to_exitcode(status)
        # (a process killed with its group is reaped by the sandbox's init, not counted here)
        cpu_used = max(usage.ru_utime + usage.ru_stime, seen_cpu)
        if reason is None and self.cpu is not None:
            # The shell, or the command it ran last, was stopped by RLIMIT_CPU: SIGXCPU at
            # the soft limit, SIGKILL at the hard one (rusage lags the limit by a tick or so).
            sig = -code if code < 0 else code - 128
            if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_used >= 0.8 * self.cpu):
                reason = "cpu_limit"
        return {
            "exit_code": code if code >= 0 else None,
            "signal": -code if code < 0 else None,
            "stdout": base64.b64encode(bytes(outs[out_r])).decode(),
            "stderr": base64.b64encode(bytes(outs[err_r])).decode(),
            "stdout_truncated": truncated[out_r],
            "stderr_truncated": truncated[err_r],
            "timed_out": reason in ("timeout", "idle_timeout"),
            "reason": reason,
            "wall_s": wall,
            "cpu_s": cpu_used,
            "peak_memory_bytes": usage.ru_maxrss * 1024,
        }

    def _script(self) -> str:
        return PREAMBLE + TRAILER + self.command + "\n"


class Waiter:
    """A step's end as a readable descriptor where ``pidfd_open`` is refused (the sandbox's
    filter refuses it): a thread waits for the process, keeps what ``wait4`` said, and
    writes one byte. Without it the step's loop woke every 5 ms to ask, which under gVisor
    made each sleeping step cost the host a few percent of a core."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fd, self._w = os.pipe()
        self.result: tuple[int, int, Any] | None = None
        self.thread = threading.Thread(target=self._wait, daemon=True, name="step-wait")

    @classmethod
    def start(cls, pid: int) -> Waiter | None:
        """A started waiter, or None where no thread can start (the session's pids limit)."""
        waiter = cls(pid)
        try:
            waiter.thread.start()
        except RuntimeError:
            waiter.close()
            return None
        return waiter

    def _wait(self) -> None:
        try:
            self.result = os.wait4(self.pid, 0)
        finally:
            os.write(self._w, b"x")

    def poll(self) -> tuple[int, int, Any]:
        """``wait4(pid, WNOHANG)``'s answer: ``(0, 0, None)`` while the step runs."""
        return self.result if self.result is not None else (0, 0, None)

    def join(self) -> tuple[int, int, Any]:
        """``wait4(pid, 0)``'s answer (the step has been killed)."""
        self.thread.join()
        assert self.result is not None
        return self.result

    def close(self) -> None:
        for fd in (self.fd, self._w):
            os.close(fd)


def _feed(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass
    finally:
        os.close(fd)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, CHUNK):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


class Kernel:
    """A persistent Python interpreter for notebook cells (started on first use)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.pid = 0
        self.to: int = -1
        self.frm: io.BufferedReader | None = None

    def _start(self) -> None:
        to_r, to_w = os.pipe2(0)  # inheritable: dup2 onto an fd of the same number
        fr_r, fr_w = os.pipe2(0)  # must leave it inheritable too
        os.set_inheritable(to_w, False)
        os.set_inheritable(fr_r, False)
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                os.chdir(WORK)
                os.dup2(fr_w, 3)
                os.dup2(to_r, 4)
                os.closerange(5, 1 << 16)
                null = os.open("/dev/null", os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                argv = [sys.executable, "-I", "-u", "-c", self.source]
                os.execve(sys.executable, argv, dict(BASE_ENV))
            finally:
                os._exit(127)
        os.close(to_r)
        os.close(fr_w)
        self.pid, self.to, self.frm = pid, to_w, os.fdopen(fr_r, "rb")

    def stop(self) -> int:
        """Kill the interpreter (if it is not dead already); returns its wait status."""
        status = 0
        if self.pid:
            kill_group(self.pid)
            _, status = os.waitpid(self.pid, 0)
            os.close(self.to)
            assert self.frm is not None
            self.frm.close()
            self.pid = 0
        return status

    def cell(self, code: str, timeout: float) -> dict[str, Any]:
        if not self.pid:
            self._start()
        assert self.frm is not None
        _feed_keep(self.to, (json.dumps({"code": code}) + "\n").encode())
        poller = select.poll()  # not select: no limit on the descriptor's number
        poller.register(self.frm, select.POLLIN)
        ready = poller.poll(None if timeout is None else max(0, math.ceil(timeout * 1000)))
        line = self.frm.readline() if ready else b""
        if not line:
            if not ready:
                self.stop()
                return {"status": "timeout", "restarted": True}
            # It closed its end without answering: it died (``os._exit``, a signal, the
            # session's memory limit); its wait status says how (a kill now changes none).
            status = self.stop()
            return {"status": "died", "detail": _died(status), "restarted": True}
        reply: dict[str, Any] = json.loads(line)
        return reply


def _died(status: int) -> str:
    """How the interpreter ended, in words."""
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return f"the interpreter exited with status {code}"
    name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
    if -code == signal.SIGKILL:
        return f"the interpreter was killed by {name} (out of memory: the session's limit)"
    return f"the interpreter was killed by {name}"


def _feed_keep(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def handle(req: dict[str, Any], payload: bytes, kernel: Kernel, fds: list[int]) -> dict[str, Any]:
    op = req.get("op")
    if op == "ping":
        return {}
    if op == "exec":
        return Step(req).run()
    answer = workspace_op(op, req, payload, fds)
    if answer is not None:
        return answer
    if op == "cell":
        return kernel.cell(str(req["code"]), float(req["timeout_s"]))
    if op == "kernel_reset":
        kernel.stop()
        return {}
    raise Refused(f"unknown op {op!r}")


def main() -> None:
    kernel_path = os.path.join(WORK, ".assay_kernel.py")
    with open(kernel_path) as fh:
        kernel = Kernel(fh.read())
    # The workspace is the agent's to hand over: its own files leave it.
    for name in (kernel_path, os.path.abspath(sys.argv[0])):
        try:
            os.unlink(name)
        except OSError:
            pass
    os.makedirs(STATE, mode=0o700, exist_ok=True)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if len(sys.argv) > 2:  # the session's process limit and how often to check it
        GUARD.limit, GUARD.poll_s = int(sys.argv[1]), float(sys.argv[2])
    GUARD.start()
    sock = socket.socket(fileno=3)
    conn = Conn(sock)
    sock.sendall(b'{"ready": true}\n')
    while True:
        line = conn.line()
        if line is None:
            return
        data: Any = b""
        try:
            req = json.loads(line)
            size = int(req.get("nbytes", 0))
            payload = conn.read(size) if size else b""
            reply = handle(req, payload, kernel, conn.fds)
            data = reply.pop("_data", b"")
            reply["ok"] = True
            reply["nbytes"] = len(data)
        except Refused as exc:
            reply = {"ok": False, "error": str(exc)}
        except Fault as exc:
            reply = {"ok": False, "error": str(exc), "fault": exc.kind}
        except Exception as exc:  # any failed request is answered, never fatal
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            if exhausted(exc):
                # Not refused for what it asks: the session's own resources failed it (no
                # process, thread, memory or descriptor left): the request is not to blame.
                reply["fault"] = "error"
        for fd in conn.fds:  # a request's descriptors do not outlive it
            os.close(fd)
        conn.fds.clear()
        sock.sendall(json.dumps(reply).encode() + b"\n")
        if data:
            sock.sendall(data)  # not joined to the line: a large payload is not copied again


if __name__ == "__main__":
    main()
