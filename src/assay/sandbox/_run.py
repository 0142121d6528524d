"""Supervising one run from the trusted side: pipes, CPU and wall clocks, kill, verdict."""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from .. import defaults
from ..types import ExecResult, Limits, Network, Status
from ._inside import status as run_status
from ._inside import wire
from .cgroups import RunCgroup

Mode = Literal["python", "exec"]
KillReason = Literal["time", "wall", "output", "memory", "stopped"]
#: How long the slot's init may take to obey a kill order before the slot is destroyed.
KILL_GRACE_S = 2.0


class Companion(Protocol):
    """A caller's descriptor served by the thread that supervises a run (the trusted end of
    a call channel): it is polled with the run's own, so the caller needs no second thread
    and the two no hand-offs. A :class:`Sandbox` serves it (``serves_companions``).

    ``fileno()`` and ``events()``: what to poll now (an fd below 0 or no events: nothing,
    for good or until the next round); ``ready(mask)`` takes what poll saw without blocking
    and never raises; ``stop_at``: the monotonic time after which a run still going is
    stopped (``inf``: never); ``finish()``: called once the run is over, to take what the
    program left without waiting.
    """

    stop_at: float

    def fileno(self) -> int: ...

    def events(self) -> int: ...

    def ready(self, mask: int) -> None: ...

    def finish(self) -> None: ...


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
    #: Host fds the program gets as 3, 4, ... (e.g. one end of a socketpair). Ownership
    #: passes to the sandbox: ``execute`` closes them, so the program's copies are the only
    #: ones and the other end sees EOF when the program is gone.
    pass_fds: tuple[int, ...] = ()
    #: A host fd (the read end of a pipe, say) that stops the run when it becomes readable
    #: or hangs up: every process of the run is killed, and the result is that of a killed
    #: program (``runtime_error``, SIGKILL). The caller keeps and closes it; it never enters
    #: the sandbox. For callers that learn early that they need no more of a run.
    stop_fd: int = -1
    #: Longest interval between two samples of the run's CPU time (a run is stopped within
    #: about this of its CPU limit). Long-lived runs with large budgets (agent sessions) set
    #: more, so hundreds of idle ones do not keep the trusted process sampling.
    cpu_poll_s: float = defaults.CPU_POLL_MAX_S
    #: The run's CPU weight, in percent of a judged run's (its cgroup's ``cpu.shares`` or
    #: ``cpu.weight``): agent sessions weigh less, so their processes yield a contested core
    #: to judged runs and take it whole when nothing else wants it.
    cpu_weight: int = 100
    #: ``none``: no network at all (judged runs); ``loopback``: the run's own network
    #: namespace gets ``lo`` up, so 127.0.0.1 and ::1 reach the run's own servers and
    #: nothing else (no other interface exists in it; an agent session's servers).
    network: Network = "none"
    #: Served by the run's supervising thread alongside the run (see :class:`Companion`);
    #: only a backend with ``serves_companions`` takes one.
    companion: Companion | None = None


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

    def tail(self, n: int) -> bytes:
        """The last ``n`` bytes (or fewer) kept."""
        out = b""
        for chunk in reversed(self.chunks):
            out = chunk + out
            if len(out) >= n:
                break
        return out[-n:]


def _runqueue_wait_s(tids: list[int]) -> float:
    """Seconds the threads ``tids`` have spent runnable, waiting for a CPU (0 where the
    kernel does not keep scheduler statistics)."""
    total = 0
    for tid in tids[:256]:
        try:
            with open(f"/proc/{tid}/schedstat", "rb") as fh:
                total += int(fh.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9


def _any_waiting_for_the_machine(tids: list[int]) -> bool:
    """Whether one of the threads ``tids`` is, right now, runnable (``R``: waiting for or
    on a CPU) or in uninterruptible sleep (``D``: waiting for the disk or for memory to be
    reclaimed): a program the machine is slowing down, not one sleeping of its own accord."""
    for tid in tids[:256]:
        try:
            with open(f"/proc/{tid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state in (b"R", b"D"):
            return True
    return False


#: When a run's output pipes start being read. Until then a program that fills one (64 KiB)
#: waits in its write, for at most this long of wall time (its CPU time is not touched, and
#: the output limit is enforced as the pipes are read): short runs, most of them, end first
#: and cost the supervisor a single wake-up.
PIPES_AFTER_S = 0.02


class Supervision:
    """State of one run; :meth:`wait` drives it to an :class:`ExecResult`.

    ``kill`` asks the slot's init to kill every process of the run; if the init does not
    answer within :data:`KILL_GRACE_S`, ``hard_kill`` takes the whole slot down.
    """

    def __init__(self, req: RunRequest, cgroup: RunCgroup | None, ncpu: int) -> None:
        self.req = req
        self.cg = cgroup
        self.ncpu = max(1, ncpu)
        self.started = time.monotonic()
        self.kill_reason: KillReason | None = None
        self.killed_at = 0.0
        self.hard_killed = False
        self.exit_record: dict[str, Any] | None = None
        self.error: str | None = None
        self.collected: dict[str, bytes] = {}
        self.running = False
        self.setup_error = ""
        self._waited_floor = 0.0  # run-queue wait seen at the last sample, and what ...
        self._waited_offset = 0.0  # ... exited threads had added before (kept monotonic)
        cap = req.limits.output_bytes
        self.out = _Capture(cap)
        self.err = _Capture(cap)

    def wait(
        self,
        req_sock: socket.socket,
        rep_sock: socket.socket,
        out_fd: int,
        err_fd: int,
        kill: Callable[[], None],
        hard_kill: Callable[[], None],
    ) -> ExecResult:
        limits = self.req.limits
        wall_limit = limits.effective_wall_s
        # poll(2) rather than a selector: no epoll instance to create and close per run.
        poller = select.poll()
        # The program process's own messages ("running", or a set-up error) matter only to
        # the verdict at the end: they are read then (``_program_messages``), not waited
        # for, so they cost the run no wake-up of this thread.
        watched: dict[int, _Capture | str] = {rep_sock.fileno(): "init"}
        if self.req.stop_fd >= 0:
            watched[self.req.stop_fd] = "stop"
        for fd in watched:
            poller.register(fd, select.POLLIN)
        # The output pipes are watched from PIPES_AFTER_S on, or once the run is over:
        # a short run then wakes this thread once (the init's exit record), not also for
        # its output and for each pipe's end (3 wake-ups per print(1) run before).
        pipes_at = self.started + PIPES_AFTER_S
        pipes = False

        def forget(fd: int) -> None:
            poller.unregister(fd)
            del watched[fd]

        comp = self.req.companion
        comp_fd, comp_events = -1, 0

        def serve_companion(active: bool) -> None:
            """Poll the companion's fd for what it wants now (nothing once the run is over)."""
            nonlocal comp_fd, comp_events
            assert comp is not None
            fd = comp.fileno() if active else -1
            events = comp.events() if fd >= 0 else 0
            if (fd, events) == (comp_fd, comp_events):
                return
            if comp_fd >= 0:
                forget(comp_fd)
            comp_fd, comp_events = (fd, events) if events else (-1, 0)
            if events:
                watched[fd] = "companion"
                poller.register(fd, events)

        finished = False
        # The counters were zeroed just before the request went out, and the armed process
        # waits without computing: the first reading would be ~0, so it is not taken.
        next_cpu_check = self.started + run_status.cpu_check_after(
            0.0, limits.time_s, self.ncpu, 0.002, self.req.cpu_poll_s
        )
        # The default wall limit is only a backstop against sleepers: a program that is
        # still computing when it fires (slowed by a busy machine) gets more wall time, up
        # to status.WALL_STRETCH times the limit, so load cannot turn into a verdict. An explicit
        # wall_s is enforced as given.
        hard_wall = run_status.stretched_wall(wall_limit, explicit=limits.wall_s is not None)
        window = run_status.CpuWindow(self.started)

        def stop(reason: KillReason) -> None:
            if self.kill_reason is None:
                self.kill_reason = reason
                self.killed_at = time.monotonic()
                with contextlib.suppress(OSError):
                    kill()

        try:
            while not finished or not (self.out.eof and self.err.eof):
                now = time.monotonic()
                if comp is not None:
                    serve_companion(not finished)
                    if not finished and now >= comp.stop_at:
                        stop("stopped")
                if not pipes and (finished or now >= pipes_at):
                    pipes = True
                    for fd, capture in ((out_fd, self.out), (err_fd, self.err)):
                        watched[fd] = capture
                        poller.register(fd, select.POLLIN)
                if not finished:
                    if self.kill_reason is None:
                        elapsed = now - self.started
                        if elapsed > wall_limit and (
                            elapsed > hard_wall or not self._on_course(window, now, hard_wall)
                        ):
                            stop("wall")
                        elif self.cg is not None and now >= next_cpu_check:
                            cpu_used = self.cg.cpu_seconds()
                            if cpu_used > limits.time_s:
                                stop("time")
                            next_cpu_check = now + run_status.cpu_check_after(
                                cpu_used, limits.time_s, self.ncpu, 0.002, self.req.cpu_poll_s
                            )
                    elif not self.hard_killed and now - self.killed_at > KILL_GRACE_S:
                        self.hard_killed = True
                        hard_kill()
                if finished or self.kill_reason is not None:
                    timeout = 0.1
                else:
                    timeout = max(0.001, min(next_cpu_check, self.started + wall_limit) - now)
                    if now - self.started > wall_limit:
                        timeout = min(timeout, defaults.CPU_POLL_MAX_S)
                    if not pipes:
                        timeout = max(0.0005, min(timeout, pipes_at - now))
                    if comp is not None and comp.stop_at < math.inf:
                        timeout = max(0.0005, min(timeout, comp.stop_at - now))
                events = poller.poll(math.ceil(timeout * 1000))
                if not events and finished and time.monotonic() - self.started > wall_limit + 30:
                    self.error = self.error or "output pipes stayed open after the run ended"
                    break
                for fd, mask in events:
                    what = watched.get(fd)
                    if what is None:
                        continue
                    if what == "companion":
                        assert comp is not None
                        comp.ready(mask)
                        continue
                    if what == "stop":
                        forget(fd)
                        if not finished:
                            stop("stopped")
                        continue
                    if what == "init":
                        if self._on_slot_message(rep_sock):
                            finished = True
                            forget(fd)
                        continue
                    assert isinstance(what, _Capture)
                    try:
                        data = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if not data:
                        what.eof = True
                        forget(fd)
                        continue
                    if what.add(data) and not finished:
                        stop("output")
        finally:
            for fd in list(watched):
                poller.unregister(fd)
            if comp is not None:
                comp.finish()
        self._program_messages(req_sock)
        return self._result()

    def _on_course(self, window: run_status.CpuWindow, now: float, hard_wall: float) -> bool:
        """Whether the run, past the wall backstop, is computing at a pace that reaches its
        CPU limit within the stretch (``hard_wall``): a program slowed by a busy host is, a
        mostly sleeping one (a few % of a CPU) is not, and is stopped now rather than holding
        its slot for the whole stretch."""
        if self.cg is None:
            return False
        try:
            cpu = self.cg.cpu_seconds()
            waited = _runqueue_wait_s(self.cg.thread_ids())
        except (OSError, ValueError):
            return False
        # A thread that exits takes its wait out of the sum: the offset keeps what it had
        # reached at the last sample, so the total never goes back (its wait since then is
        # lost, which can only make the run look less busy than it was, never more).
        if waited < self._waited_floor:
            self._waited_offset += self._waited_floor - waited
        self._waited_floor = waited
        window.add(now, cpu, waited + self._waited_offset)
        if run_status.on_course(
            window.share(), cpu, self.req.limits.time_s, now, self.started, hard_wall
        ):
            return True
        # Its pace says it sleeps; a thread that is runnable or waiting for the disk right
        # now says the machine is what slows it (a start-up starved of CPU and I/O by a busy
        # host read as asleep and was stopped at the backstop, time_limit with 0.15 s of its
        # CPU used): it is asked again at the next poll, until the stretch.
        try:
            return _any_waiting_for_the_machine(self.cg.thread_ids())
        except (OSError, ValueError):
            return False

    def _program_messages(self, sock: socket.socket) -> None:
        """The program process's last words before it ran untrusted code ("running", or
        why its set-up failed), queued on its request socket: read once the run is over.
        The process closed its end before running the program, so there are at most a
        few, and nothing the program does can add to them."""
        for _ in range(8):
            try:
                msg, fds = wire.recv(sock, wire.DONTWAIT)
            except (OSError, ValueError):  # BlockingIOError: nothing (more) was sent
                return
            for fd in fds:
                os.close(fd)
            if msg is None:
                return
            if msg.get("kind") == "running":
                self.running = True
                return  # its last word: nothing it sends after it is read
            if msg.get("kind") == "error" and not self.running:
                self.setup_error = str(msg.get("message", ""))

    def _on_slot_message(self, sock: socket.socket) -> bool:
        """Handle one message from the slot's init; True when the run is over."""
        try:
            msg, fds = wire.recv(sock)
        except (OSError, ValueError) as exc:
            self.error = f"slot channel: {exc}"
            return True
        if msg is None:
            if self.kill_reason is None:
                self.error = "the sandbox's init died"
            return True
        kind = msg.get("kind")
        if kind == "exit":
            self.exit_record = msg
            for fd in fds:
                try:
                    self.collected = {p: c for p, c, _m in wire.unpack_files(fd)}
                finally:
                    os.close(fd)
            return True
        for fd in fds:
            os.close(fd)
        if kind == "error":
            self.error = f"sandbox {msg.get('stage')} failed: {msg.get('message')}"
            return True
        return False

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
        if rec and not self.running and self.kill_reason is None and self.error is None:
            if oom:
                # Writing the run's input files (charged to the run's memory, as its tmpfs
                # pages are) did not fit its memory limit: the run's own doing.
                self.setup_error = "the input files do not fit the run's memory limit"
            else:
                # The program process died before it took over: setup failed, our fault.
                self.error = f"program setup failed: {self.setup_error or 'process died'}"
        exit_code = rec.get("exit_code")
        sig = rec.get("signal")
        if not rec and self.kill_reason is not None:
            sig = int(signal.SIGKILL)  # we killed it before it could report
        status = self._status(rec, cpu, oom, sig, exit_code)
        if status == "memory_limit" and self.setup_error and not self.running:
            self.err.add(f"assay: {self.setup_error}\n".encode())
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
            leftover_processes=int(rec.get("left", 0)),
            files=self.collected,
        )

    def _error_stderr(self) -> bytes:
        msg = (self.error or "sandbox failed").encode()
        return msg + b"\n" + self.err.value()

    def _status(
        self, rec: dict[str, Any], cpu: float, oom: bool, sig: int | None, code: int | None
    ) -> Status:
        status = run_status.decide(
            kill_reason=self.kill_reason,
            reported=bool(rec),
            failed=self.error is not None,
            oom=oom,
            exit_code=code,
            sig=sig,
            cpu_s=cpu,
            time_s=self.req.limits.time_s,
            stderr_tail=self.err.tail(run_status.MEMORY_ERROR_TAIL),
        )
        return cast(Status, status)
